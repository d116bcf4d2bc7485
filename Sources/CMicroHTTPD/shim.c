#include "CMicroHTTPD.h"
#include "tls_binding.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct CMicroHTTPD_Daemon {
    struct MHD_Daemon *daemon;
    CMicroHTTPD_LogCallback log;
    void *log_cls;
    MHD_socket quiesced_socket;
    int uses_epoll;
    char last_error[256];
    /* HTTPS only: what the connection callback needs to hand each connection its credentials. */
    struct CMicroHTTPD_TLSBinding tls;
};

static void CMicroHTTPD_log_trampoline(void *cls, const char *format, va_list arguments) {
    struct CMicroHTTPD_Daemon *handle = cls;
    char message[sizeof handle->last_error];
    vsnprintf(message, sizeof message, format, arguments);
    size_t length = strlen(message);
    while (length > 0 && (message[length - 1] == '\n' || message[length - 1] == '\r')) {
        message[--length] = '\0';
    }
    memcpy(handle->last_error, message, length + 1);
    if (handle->log != NULL) {
        handle->log(handle->log_cls, message);
    }
}

static size_t CMicroHTTPD_keep_escaped(void *cls, struct MHD_Connection *connection, char *value) {
    (void)cls;
    (void)connection;
    return strlen(value);
}

struct CMicroHTTPD_Daemon *CMicroHTTPD_start_daemon(const struct CMicroHTTPD_Options *options,
                                                    char *error, size_t error_capacity) {
    struct sockaddr_in address4;
    struct sockaddr_in6 address6;
    const struct sockaddr *address;
    unsigned int flags = (options->use_poll ? MHD_USE_POLL_INTERNAL_THREAD : MHD_USE_EPOLL_INTERNAL_THREAD)
                         | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;

    memset(&address4, 0, sizeof address4);
    memset(&address6, 0, sizeof address6);
    const char *host = options->host != NULL ? options->host : "127.0.0.1";
    if (inet_pton(AF_INET, host, &address4.sin_addr) == 1) {
        address4.sin_family = AF_INET;
        address4.sin_port = htons(options->port);
        address = (const struct sockaddr *)&address4;
    } else if (inet_pton(AF_INET6, host, &address6.sin6_addr) == 1) {
        address6.sin6_family = AF_INET6;
        address6.sin6_port = htons(options->port);
        address = (const struct sockaddr *)&address6;
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(error, error_capacity, "host is not a numeric IPv4 or IPv6 address");
        return NULL;
    }
    if (options->turbo) {
        flags |= MHD_USE_TURBO;
    }
    if (options->tls != NULL) {
        flags |= MHD_USE_TLS;
    }

    struct CMicroHTTPD_Daemon *handle = calloc(1, sizeof *handle);
    if (handle == NULL) {
        snprintf(error, error_capacity, "out of memory");
        return NULL;
    }
    handle->log = options->log;
    handle->log_cls = options->log_cls;
    handle->quiesced_socket = MHD_INVALID_SOCKET;
    handle->uses_epoll = !options->use_poll;

    struct MHD_OptionItem items[20];
    size_t count = 0;
#define CMICROHTTPD_ADD(option_, value_, pointer_) \
    items[count++] = (struct MHD_OptionItem){ (option_), (intptr_t)(value_), (void *)(pointer_) }
    /* The logger first: libmicrohttpd warns (on stderr) about options given before it. */
    CMICROHTTPD_ADD(MHD_OPTION_EXTERNAL_LOGGER, CMicroHTTPD_log_trampoline, handle);
    CMICROHTTPD_ADD(MHD_OPTION_SOCK_ADDR, 0, address);
    if (options->thread_pool_size > 1) {
        CMICROHTTPD_ADD(MHD_OPTION_THREAD_POOL_SIZE, options->thread_pool_size, NULL);
    }
    if (options->reuse_port) {
        CMICROHTTPD_ADD(MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL);
    }
    if (options->connection_limit > 0) {
        CMICROHTTPD_ADD(MHD_OPTION_CONNECTION_LIMIT, options->connection_limit, NULL);
    }
    if (options->connection_timeout_seconds > 0) {
        CMICROHTTPD_ADD(MHD_OPTION_CONNECTION_TIMEOUT, options->connection_timeout_seconds, NULL);
    }
    if (options->connection_memory_limit > 0) {
        CMICROHTTPD_ADD(MHD_OPTION_CONNECTION_MEMORY_LIMIT, options->connection_memory_limit, NULL);
    }
    if (options->per_ip_connection_limit > 0) {
        CMICROHTTPD_ADD(MHD_OPTION_PER_IP_CONNECTION_LIMIT, options->per_ip_connection_limit, NULL);
    }
    if (options->listen_backlog > 0) {
        CMICROHTTPD_ADD(MHD_OPTION_LISTEN_BACKLOG_SIZE, options->listen_backlog, NULL);
    }
    if (options->keep_url_escaped) {
        CMICROHTTPD_ADD(MHD_OPTION_UNESCAPE_CALLBACK, CMicroHTTPD_keep_escaped, NULL);
    }
    if (options->request_completed != NULL) {
        CMICROHTTPD_ADD(MHD_OPTION_NOTIFY_COMPLETED, options->request_completed, options->request_completed_cls);
    }
    if (options->tls != NULL) {
        handle->tls = (struct CMicroHTTPD_TLSBinding){options->tls, options->notify_connection, options->notify_connection_cls};
        CMICROHTTPD_ADD(MHD_OPTION_HTTPS_PRIORITIES, 0, options->tls_priorities != NULL ? options->tls_priorities : "NORMAL");
        CMICROHTTPD_ADD(MHD_OPTION_HTTPS_CERT_CALLBACK, 0, CMicroHTTPD_tls_retrieve_certificate);
        CMICROHTTPD_ADD(MHD_OPTION_NOTIFY_CONNECTION, CMicroHTTPD_tls_notify_connection, &handle->tls);
    } else if (options->notify_connection != NULL) {
        CMICROHTTPD_ADD(MHD_OPTION_NOTIFY_CONNECTION, options->notify_connection, options->notify_connection_cls);
    }
    CMICROHTTPD_ADD(MHD_OPTION_END, 0, NULL);
#undef CMICROHTTPD_ADD

    handle->daemon = MHD_start_daemon(flags, options->port,
                                      options->accept_policy, options->accept_policy_cls,
                                      options->access_handler, options->access_handler_cls,
                                      MHD_OPTION_ARRAY, items,
                                      MHD_OPTION_END);
    if (handle->daemon == NULL) {
        snprintf(error, error_capacity, "%s",
                 handle->last_error[0] != '\0' ? handle->last_error : "MHD_start_daemon failed");
        free(handle);
        return NULL;
    }
    return handle;
}

uint16_t CMicroHTTPD_daemon_port(struct CMicroHTTPD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info != NULL ? info->port : 0;
}

int CMicroHTTPD_quiesce_daemon(struct CMicroHTTPD_Daemon *daemon) {
    /* libmicrohttpd 0.9.75 cannot quiesce an epoll daemon safely: MHD_quiesce_daemon and the
       daemon's own threads both remove the listening socket from the epoll set, unlocked, and
       whichever loses that race gets ENOENT and aborts the process (MHD_PANIC in MHD_epoll and in
       MHD_quiesce_daemon's worker-pool loop). */
    if (daemon->uses_epoll) {
        return -2;
    }
    MHD_socket socket = MHD_quiesce_daemon(daemon->daemon);
    if (socket == MHD_INVALID_SOCKET) {
        return -1;
    }
    /* The descriptor stays open until MHD_stop_daemon (MHD threads may still refer to it), but
       shutting the listener down makes the kernel refuse new connections immediately. */
    shutdown(socket, SHUT_RDWR);
    daemon->quiesced_socket = socket;
    return 0;
}

void CMicroHTTPD_stop_daemon(struct CMicroHTTPD_Daemon *daemon) {
    MHD_stop_daemon(daemon->daemon);
    if (daemon->quiesced_socket != MHD_INVALID_SOCKET) {
        close(daemon->quiesced_socket);
    }
    free(daemon);
}

int CMicroHTTPD_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info != NULL ? info->connect_fd : -1;
}

int CMicroHTTPD_connection_address(struct MHD_Connection *connection, char *buffer, size_t capacity) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || capacity == 0) {
        return -1;
    }
    const struct sockaddr *address = info->client_addr;
    const void *raw;
    if (address->sa_family == AF_INET) {
        raw = &((const struct sockaddr_in *)address)->sin_addr;
    } else if (address->sa_family == AF_INET6) {
        raw = &((const struct sockaddr_in6 *)address)->sin6_addr;
    } else {
        return -1;
    }
    return inet_ntop(address->sa_family, raw, buffer, (socklen_t)capacity) != NULL ? 0 : -1;
}

enum MHD_Result CMicroHTTPD_queue_response(struct MHD_Connection *connection, unsigned int status,
                                           const char *headers, size_t header_count,
                                           const void *body, size_t body_length) {
    struct MHD_Response *response =
        MHD_create_response_from_buffer(body_length, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (response == NULL) {
        return MHD_NO;
    }
    const char *cursor = headers;
    for (size_t index = 0; index < header_count; index++) {
        const char *name = cursor;
        const char *value = name + strlen(name) + 1;
        cursor = value + strlen(value) + 1;
        /* MHD refuses headers it manages itself (e.g. Content-Length); those are skipped. */
        (void)MHD_add_response_header(response, name, value);
    }
    enum MHD_Result result = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return result;
}
