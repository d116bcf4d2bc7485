#ifndef ENGAGE_CPROCESS_H
#define ENGAGE_CPROCESS_H

#include <stddef.h>

/// Runs a program to completion and captures its standard output and error together.
/// `argv_block` holds the program path and its arguments, each terminated by NUL.
/// At most `output_capacity` bytes of output are kept; the rest is read and dropped.
/// Returns 0 and sets `*exit_status` (the exit code, or 128 + signal) on success, or -errno.
int CProcess_run(const char *argv_block, size_t block_length,
                 char *output, size_t output_capacity, size_t *output_length,
                 int *exit_status);

/// Starts a program in a new session, with no inherited descriptors beyond /dev/null for
/// standard input, output and error, and does not wait for it. Returns its pid or -errno.
int CProcess_spawn_detached(const char *argv_block, size_t block_length);

/// Starts a program with exactly the environment in `env_block` (NAME=value strings, each
/// terminated by NUL), standard input from /dev/null, standard output and error appended to
/// `output_path`, and no other inherited descriptors. The caller collects it with
/// CProcess_wait. Returns its pid or -errno.
int CProcess_spawn(const char *argv_block, size_t argv_length,
                   const char *env_block, size_t env_length, const char *output_path);

/// Collects a child started by CProcess_spawn. Returns 1 and sets `*exit_status` (the exit
/// code, or 128 + signal) when it has ended; 0 when it still runs and `block` is 0; or -errno.
int CProcess_wait(int pid, int block, int *exit_status);

/// Replaces this process with the program (for `engage db psql`). Returns -errno on failure.
int CProcess_exec(const char *argv_block, size_t block_length);

/// Makes standard output line buffered, so printed lines reach a pipe or a file as they are
/// printed rather than when a block fills or the process exits.
void CProcess_line_buffer_stdout(void);

#endif
