#ifndef ENGAGE_CMICROHTTPD_H
#define ENGAGE_CMICROHTTPD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/*
 * Fixed-argument wrappers around the variadic and macro-only parts of libmicrohttpd,
 * so that Swift never has to build a va_list. Every symbol carries the CMicroHTTPD_ prefix.
 */

/* Receives one formatted libmicrohttpd log message (no trailing newline). */
typedef void (*CMicroHTTPD_LogCallback)(void *cls, const char *message);

/*
 * A certificate chain and its private key for HTTPS, replaceable while daemons serve with it:
 * each TLS handshake takes the credentials current at that moment and keeps them until its
 * connection closes, so replacing them (CMicroHTTPD_tls_load) never disturbs a connection.
 */
struct CMicroHTTPD_TLS;

/* What a loaded certificate says about itself, for logs and metrics. */
struct CMicroHTTPD_CertificateInfo {
    /* The leaf certificate's subject DN (RFC 4514), truncated if longer. */
    char subject[256];
    /* Validity, in seconds since 1970. */
    int64_t not_before;
    int64_t not_after;
    /* SHA-256 of the leaf certificate's DER encoding. */
    uint8_t sha256[32];
    /* Certificates in the chain, the leaf included. */
    unsigned int chain_length;
};

/* Why CMicroHTTPD_tls_load refused new credentials (the previous ones stay in use). */
enum CMicroHTTPD_TLSLoadError {
    CMICROHTTPD_TLS_CERTIFICATE_UNREADABLE = -1,
    CMICROHTTPD_TLS_CERTIFICATE_INVALID = -2,
    CMICROHTTPD_TLS_KEY_UNREADABLE = -3,
    CMICROHTTPD_TLS_KEY_INVALID = -4,
    CMICROHTTPD_TLS_KEY_MISMATCH = -5,
    CMICROHTTPD_TLS_OUT_OF_MEMORY = -6,
};

/* An empty holder; NULL when out of memory. Freed by CMicroHTTPD_tls_free. */
struct CMicroHTTPD_TLS *CMicroHTTPD_tls_create(void);

/*
 * Reads a PEM certificate chain (the server's certificate first, its issuers after it in any order)
 * and its PEM private
 * key (unencrypted), checks that they belong together and makes them the credentials of every
 * later handshake. Returns 0 and fills `info`, or a CMicroHTTPD_TLSLoadError with a reason in
 * `error` (never any key material); on failure the current credentials stay.
 */
int CMicroHTTPD_tls_load(struct CMicroHTTPD_TLS *tls, const char *certificate_path, const char *key_path,
                         struct CMicroHTTPD_CertificateInfo *info, char *error, size_t error_capacity);

/* Frees the holder; every daemon using it must have stopped. */
void CMicroHTTPD_tls_free(struct CMicroHTTPD_TLS *tls);

/* Everything CMicroHTTPD_start_daemon needs; zero means "libmicrohttpd's default". */
struct CMicroHTTPD_Options {
    /* Numeric IPv4 or IPv6 address to bind, e.g. "127.0.0.1" or "::1". */
    const char *host;
    uint16_t port;
    /* Threads of the internal thread pool; 0 or 1 means one polling thread. */
    unsigned int thread_pool_size;
    /* Non-zero: the threads wait with poll() instead of epoll. */
    int use_poll;
    /* Non-zero: bind with SO_REUSEPORT so several daemons can share one port. */
    int reuse_port;
    /* Non-zero: MHD_USE_TURBO (fewer sanity checks on sockets). */
    int turbo;
    unsigned int connection_limit;
    unsigned int connection_timeout_seconds;
    size_t connection_memory_limit;
    unsigned int per_ip_connection_limit;
    unsigned int listen_backlog;
    /* Non-zero: keep the URL and query arguments percent-encoded (no MHD unescaping). */
    int keep_url_escaped;
    /* HTTPS with these credentials when not NULL (they must outlive the daemon), offering the
       protocols and ciphers of the GnuTLS priority string `tls_priorities` ("NORMAL" if NULL). */
    struct CMicroHTTPD_TLS *tls;
    const char *tls_priorities;

    MHD_AcceptPolicyCallback accept_policy;
    void *accept_policy_cls;
    MHD_AccessHandlerCallback access_handler;
    void *access_handler_cls;
    MHD_RequestCompletedCallback request_completed;
    void *request_completed_cls;
    MHD_NotifyConnectionCallback notify_connection;
    void *notify_connection_cls;
    CMicroHTTPD_LogCallback log;
    void *log_cls;
};

/* An owned daemon plus the state its shims need; freed by CMicroHTTPD_stop_daemon. */
struct CMicroHTTPD_Daemon;

/*
 * Starts a daemon with an internal polling thread (or thread pool; epoll unless use_poll)
 * and suspend/resume enabled. Returns NULL on failure and writes a reason into `error`.
 */
struct CMicroHTTPD_Daemon *CMicroHTTPD_start_daemon(const struct CMicroHTTPD_Options *options,
                                                    char *error, size_t error_capacity);

/* The bound port (useful after binding port 0). */
uint16_t CMicroHTTPD_daemon_port(struct CMicroHTTPD_Daemon *daemon);

/*
 * Stops accepting connections (MHD_quiesce_daemon) and shuts the listening socket down so the
 * kernel refuses new connections at once; the socket is closed by CMicroHTTPD_stop_daemon.
 * Returns 0 on success, -1 if the daemon was not listening, -2 for an epoll daemon, which
 * libmicrohttpd cannot quiesce without risking an abort: such a daemon keeps accepting until it
 * stops, so its accept policy must refuse connections meanwhile.
 */
int CMicroHTTPD_quiesce_daemon(struct CMicroHTTPD_Daemon *daemon);

/* Stops the daemon (every connection must be resumed first), closes sockets, frees the handle. */
void CMicroHTTPD_stop_daemon(struct CMicroHTTPD_Daemon *daemon);

/* The connection's socket, or -1. */
int CMicroHTTPD_connection_fd(struct MHD_Connection *connection);

/* Writes the peer's numeric address into `buffer`; returns 0, or -1 if unknown. */
int CMicroHTTPD_connection_address(struct MHD_Connection *connection, char *buffer, size_t capacity);

/*
 * Creates a response with a copy of `body`, adds `header_count` headers given as
 * consecutive NUL-terminated name and value strings in `headers`, queues it and releases it.
 * Returns MHD_YES when queued.
 */
enum MHD_Result CMicroHTTPD_queue_response(struct MHD_Connection *connection, unsigned int status,
                                           const char *headers, size_t header_count,
                                           const void *body, size_t body_length);

#endif
