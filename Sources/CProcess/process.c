#define _GNU_SOURCE
#include "CProcess.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/*
 * A child starts with no signal blocked and every signal handled the default way. Without this it
 * would inherit the calling thread's mask: Dispatch's worker threads (and Swift's cooperative
 * pool, and threads they start) block signals such as SIGTERM, so a spawned service could never
 * be asked to stop (pg_autoctl waits forever for its own children to stop).
 */
static void reset_signals(posix_spawnattr_t *attributes, short extra_flags) {
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(attributes, &none);
    posix_spawnattr_setsigdefault(attributes, &all);
    posix_spawnattr_setflags(attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | extra_flags);
}

/* Splits a NUL-separated block into a NULL-terminated argv; the caller frees the array only. */
static char **split_arguments(const char *block, size_t length) {
    size_t count = 0;
    for (size_t i = 0; i < length; i++) if (block[i] == '\0') count++;
    if (count == 0) return NULL;
    char **argv = calloc(count + 1, sizeof(char *));
    if (!argv) return NULL;
    size_t index = 0;
    const char *start = block;
    for (size_t i = 0; i < length; i++) {
        if (block[i] == '\0') {
            argv[index++] = (char *)start;
            start = block + i + 1;
        }
    }
    return argv;
}

int CProcess_run(const char *argv_block, size_t block_length,
                 char *output, size_t output_capacity, size_t *output_length,
                 int *exit_status) {
    *output_length = 0;
    char **argv = split_arguments(argv_block, block_length);
    if (!argv) return -EINVAL;

    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) { int e = errno; free(argv); return -e; }

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
    /* Nothing else of ours leaks into the child (or into a server it daemonizes). */
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);

    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    reset_signals(&attributes, 0);
    pid_t pid;
    int spawned = posix_spawn(&pid, argv[0], &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    free(argv);
    close(pipe_fds[1]);
    if (spawned != 0) { close(pipe_fds[0]); return -spawned; }

    char scratch[4096];
    for (;;) {
        ssize_t n = read(pipe_fds[0], scratch, sizeof scratch);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        size_t room = output_capacity - *output_length;
        size_t keep = (size_t)n < room ? (size_t)n : room;
        memcpy(output + *output_length, scratch, keep);
        *output_length += keep;
    }
    close(pipe_fds[0]);

    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -errno;
    }
    if (WIFEXITED(status)) *exit_status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) *exit_status = 128 + WTERMSIG(status);
    else *exit_status = -1;
    return 0;
}

int CProcess_spawn_detached(const char *argv_block, size_t block_length) {
    char **argv = split_arguments(argv_block, block_length);
    if (!argv) return -EINVAL;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    reset_signals(&attributes, POSIX_SPAWN_SETSID);
    pid_t pid;
    int spawned = posix_spawn(&pid, argv[0], &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    free(argv);
    return spawned == 0 ? (int)pid : -spawned;
}

int CProcess_spawn(const char *argv_block, size_t argv_length,
                   const char *env_block, size_t env_length, const char *output_path) {
    char **argv = split_arguments(argv_block, argv_length);
    if (!argv) return -EINVAL;
    char *no_environment[] = { NULL };
    char **envp = env_length > 0 ? split_arguments(env_block, env_length) : no_environment;
    if (!envp) { free(argv); return -EINVAL; }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, output_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    reset_signals(&attributes, 0);
    pid_t pid;
    int spawned = posix_spawn(&pid, argv[0], &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    free(argv);
    if (envp != no_environment) free(envp);
    return spawned == 0 ? (int)pid : -spawned;
}

int CProcess_wait(int pid, int block, int *exit_status) {
    int status = 0;
    pid_t result;
    do {
        result = waitpid((pid_t)pid, &status, block ? 0 : WNOHANG);
    } while (result < 0 && errno == EINTR);
    if (result < 0) return -errno;
    if (result == 0) return 0;
    if (WIFEXITED(status)) *exit_status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) *exit_status = 128 + WTERMSIG(status);
    else *exit_status = -1;
    return 1;
}

int CProcess_exec(const char *argv_block, size_t block_length) {
    char **argv = split_arguments(argv_block, block_length);
    if (!argv) return -EINVAL;
    execv(argv[0], argv);
    int e = errno;
    free(argv);
    return -e;
}

void CProcess_line_buffer_stdout(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
}
