#define _GNU_SOURCE /* memmem */
#include "CLoadGenerator.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------ */
/* Latency histogram: exact below 1,024 µs, then 512 buckets per power of two (0.2% wide).     */

#define HISTOGRAM_BUCKETS (64 * 512)

static int bucket_of(uint64_t microseconds) {
    if (microseconds < 1024) {
        return (int)microseconds;
    }
    int highest = 63 - __builtin_clzll(microseconds);
    int shift = highest - 9;
    return shift * 512 + (int)(microseconds >> shift);
}

static uint64_t bucket_value(int bucket) {
    if (bucket < 1024) {
        return (uint64_t)bucket;
    }
    int shift = bucket / 512 - 1;
    return (uint64_t)(bucket - shift * 512) << shift;
}

/* ------------------------------------------------------------------------------------------ */
/* The events: Benchmarks/wrk/batch.lua's variants, formulas and id layout.                   */

#define VARIANTS 997
#define HEADROOM 1024 /* room for the request line and headers in front of the body */

struct variant {
    char before_time[128];
    size_t before_time_length;
    char after_time[320];
    size_t after_time_length;
};

static void make_variants(struct variant *variants) {
    static const char *categories[] = {"new_photo", "chat_message", "promo_sale", "breaking_news"};
    for (int v = 0; v < VARIANTS; v++) {
        struct variant *variant = &variants[v];
        variant->before_time_length = (size_t)snprintf(
            variant->before_time, sizeof variant->before_time,
            "\",\"device_id\":\"device-%d\",\"category\":\"%s\",\"occurred_at\":\"", (v * 7919) % 50000, categories[v % 4]);
        variant->after_time_length = (size_t)snprintf(
            variant->after_time, sizeof variant->after_time,
            "\",\"attachment\":{\"kind\":\"image\",\"format\":\"jpeg\",\"bytes\":%d,\"source\":\"%s\",\"download_ms\":%d},"
            "\"outcome\":\"attached\",\"processing_ms\":%d,\"time_will_expire\":false,\"network\":\"%s\",\"strategy\":\"full\"}",
            150000 + (v * 89) % 90000, v % 5 == 0 ? "cache" : "network", 300 + (v * 13) % 1700,
            350 + (v * 17) % 1800, v % 2 == 0 ? "wifi" : "cellular");
    }
}

static const char hex_digits[] = "0123456789abcdef";

static char *put_hex(char *out, uint64_t value, int digits) {
    for (int i = digits - 1; i >= 0; i--) {
        out[i] = hex_digits[value & 15];
        value >>= 4;
    }
    return out + digits;
}

static char *put_bytes(char *out, const char *bytes, size_t length) {
    memcpy(out, bytes, length);
    return out + length;
}

#define PUT_LITERAL(out, literal) put_bytes((out), (literal), sizeof(literal) - 1)

struct generator {
    struct variant *variants;
    uint32_t tag;
    uint32_t stream;
    int random_ids;
    uint64_t counter;
    uint64_t random_state;
};

static uint64_t next_random(struct generator *generator) {
    /* xorshift64*: only needs to scatter ids over the index. */
    uint64_t x = generator->random_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    generator->random_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Writes one request body of `batch` events at `out`; returns its end. `out` must have room for
   batch * 700 + 2 bytes. */
static char *put_body(struct generator *generator, char *out, uint32_t batch) {
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    uint64_t milliseconds = (uint64_t)wall.tv_sec * 1000 + (uint64_t)wall.tv_nsec / 1000000;
    struct tm calendar;
    time_t seconds = wall.tv_sec;
    gmtime_r(&seconds, &calendar);
    char occurred[32];
    int occurred_length = snprintf(occurred, sizeof occurred, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                                   calendar.tm_year + 1900, calendar.tm_mon + 1, calendar.tm_mday, calendar.tm_hour,
                                   calendar.tm_min, calendar.tm_sec, (int)(wall.tv_nsec / 1000000));

    *out++ = '[';
    for (uint32_t i = 0; i < batch; i++) {
        uint64_t counter = generator->counter++;
        const struct variant *variant = &generator->variants[counter % VARIANTS];
        if (i > 0) {
            *out++ = ',';
        }
        out = PUT_LITERAL(out, "{\"event_id\":\"");
        if (generator->random_ids) {
            uint64_t random = next_random(generator);
            out = put_hex(out, random >> 16, 8);
            *out++ = '-';
            out = put_hex(out, random & 0xffff, 4);
            out = PUT_LITERAL(out, "-4");
        } else {
            out = put_hex(out, milliseconds >> 16, 8);
            *out++ = '-';
            out = put_hex(out, milliseconds & 0xffff, 4);
            out = PUT_LITERAL(out, "-7");
        }
        out = put_hex(out, generator->tag, 3);
        out = PUT_LITERAL(out, "-8");
        out = put_hex(out, generator->stream, 3);
        *out++ = '-';
        out = put_hex(out, counter, 12);
        out = PUT_LITERAL(out, "\",\"type\":\"delivered\",\"notification_id\":\"apns-");
        out = put_hex(out, generator->stream, 3);
        out = put_hex(out, counter, 12);
        out = put_bytes(out, variant->before_time, variant->before_time_length);
        out = put_bytes(out, occurred, (size_t)occurred_length);
        out = put_bytes(out, variant->after_time, variant->after_time_length);
    }
    *out++ = ']';
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* Connections                                                                                */

enum connection_state {
    CONNECTION_CLOSED,     /* waiting until `retry_at_us` to connect again */
    CONNECTION_CONNECTING, /* non-blocking connect in progress */
    CONNECTION_HANDSHAKING, /* HTTPS: connected, TLS handshake in progress */
    CONNECTION_IDLE,       /* ready for a request (paced: at `due_us`) */
    CONNECTION_SENDING,    /* request partly written */
    CONNECTION_RECEIVING,  /* request written, answer not complete */
};

struct connection {
    int fd;
    gnutls_session_t session; /* HTTPS only, from the handshake on */
    enum connection_state state;
    char *request;       /* HEADROOM + body capacity */
    const char *pending; /* unwritten part of the request */
    size_t pending_length;
    char *answer;
    size_t answer_length;
    size_t answer_capacity;
    uint64_t sent_at_us;
    uint64_t due_us;
    uint64_t retry_at_us;
};

struct run {
    const struct CLoadGenerator_Options *options;
    struct CLoadGenerator_Result *result;
    struct generator generator;
    struct connection *connections;
    int epoll;
    struct sockaddr_in address;
    char header_prefix[512];
    size_t header_prefix_length;
    size_t body_capacity;
    uint64_t *histogram;
    uint64_t latency_sum_us;
    uint64_t next_sweep_us;
    /* Paced runs: the next free slot and the distance between slots, in fractional microseconds
       so that high rates are not rounded up. */
    double next_slot_us;
    double interval_us;
    uint64_t first_sent_us;
    uint64_t last_answer_us;
    uint64_t successful_connects;
    /* HTTPS only: the CA certificates a server must chain to. */
    gnutls_certificate_credentials_t tls_credentials;
    /* With options->latency_file: where each answer's line goes, and the Unix time of the
       monotonic clock's zero, in microseconds. */
    FILE *latencies;
    int64_t unix_offset_us;
};

static uint64_t now_us(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
}

/* One line of options->latency_file (see CLoadGenerator.h). */
static void record_latency(struct run *run, uint64_t sent_at_us, uint64_t latency_us, int status) {
    if (run->latencies != NULL) {
        fprintf(run->latencies, "%lld %llu %d\n", (long long)((int64_t)sent_at_us + run->unix_offset_us),
                (unsigned long long)latency_us, status);
    }
}

static void close_connection(struct run *run, struct connection *connection, uint64_t retry_at_us) {
    if (connection->session != NULL) {
        gnutls_deinit(connection->session);
        connection->session = NULL;
    }
    if (connection->fd >= 0) {
        close(connection->fd); /* also removes it from the epoll set */
        connection->fd = -1;
    }
    connection->state = CONNECTION_CLOSED;
    connection->answer_length = 0;
    connection->pending_length = 0;
    connection->retry_at_us = retry_at_us;
    /* The next pass over the connections (which reopens it) comes no later than the retry time. */
    if (retry_at_us < run->next_sweep_us) {
        run->next_sweep_us = retry_at_us;
    }
}

static void make_idle(struct run *run, struct connection *connection, uint64_t now);

static void note_problem(struct run *run, const char *format, const char *detail) {
    if (run->result->first_problem[0] == '\0') {
        snprintf(run->result->first_problem, sizeof run->result->first_problem, format, detail);
    }
}

/* HTTPS: drives the handshake as far as the socket allows; the connection is idle once done. */
static void continue_handshake(struct run *run, struct connection *connection, uint64_t now) {
    int result;
    do {
        result = gnutls_handshake(connection->session);
    } while (result == GNUTLS_E_INTERRUPTED);
    if (result == GNUTLS_E_AGAIN) {
        return; /* the next edge on the socket goes on */
    }
    if (result < 0) {
        run->result->connect_errors++;
        note_problem(run, "TLS handshake failed: %s", gnutls_strerror(result));
        close_connection(run, connection, now + 100000);
        return;
    }
    make_idle(run, connection, now);
}

/* The TCP connection is up: plain HTTP is ready, HTTPS starts its handshake. */
static void connected(struct run *run, struct connection *connection, uint64_t now) {
    run->successful_connects++;
    if (run->tls_credentials == NULL) {
        make_idle(run, connection, now);
        return;
    }
    if (gnutls_init(&connection->session, GNUTLS_CLIENT | GNUTLS_NONBLOCK) < 0
        || gnutls_set_default_priority(connection->session) < 0
        || gnutls_credentials_set(connection->session, GNUTLS_CRD_CERTIFICATE, run->tls_credentials) < 0) {
        run->result->connect_errors++;
        close_connection(run, connection, now + 100000);
        return;
    }
    gnutls_session_set_verify_cert(connection->session, run->options->host, 0);
    gnutls_transport_set_int(connection->session, connection->fd);
    connection->state = CONNECTION_HANDSHAKING;
    continue_handshake(run, connection, now);
}

static void open_connection(struct run *run, struct connection *connection) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        run->result->connect_errors++;
        connection->retry_at_us = now_us() + 100000;
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int status = connect(fd, (const struct sockaddr *)&run->address, sizeof run->address);
    if (status != 0 && errno != EINPROGRESS) {
        close(fd);
        run->result->connect_errors++;
        connection->retry_at_us = now_us() + 100000;
        return;
    }
    struct epoll_event event = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = connection};
    if (epoll_ctl(run->epoll, EPOLL_CTL_ADD, fd, &event) != 0) {
        close(fd);
        run->result->connect_errors++;
        connection->retry_at_us = now_us() + 100000;
        return;
    }
    connection->fd = fd;
    connection->state = CONNECTION_CONNECTING;
    connection->answer_length = 0;
    if (status == 0) {
        connected(run, connection, now_us());
    }
}

/* Paced runs give each idle connection the next free slot of the schedule, never one in the
   past, so that a slow server is not met with a burst (as wrk/batch.lua's delay() does). */
static void make_idle(struct run *run, struct connection *connection, uint64_t now) {
    connection->state = CONNECTION_IDLE;
    if (run->interval_us == 0) {
        connection->due_us = 0;
        return;
    }
    double slot = run->next_slot_us > (double)now ? run->next_slot_us : (double)now;
    connection->due_us = (uint64_t)ceil(slot);
    run->next_slot_us = slot + run->interval_us;
}

/* Sends what it can: bytes written, or -1 with errno EAGAIN (wait for the socket), EINTR or another
   error. HTTPS goes through the session (which must be called again with the same bytes). */
static ssize_t send_some(struct connection *connection, const char *bytes, size_t length) {
    if (connection->session == NULL) {
        return send(connection->fd, bytes, length, MSG_NOSIGNAL);
    }
    ssize_t written = gnutls_record_send(connection->session, bytes, length);
    if (written >= 0) {
        return written;
    }
    errno = written == GNUTLS_E_AGAIN ? EAGAIN : written == GNUTLS_E_INTERRUPTED ? EINTR : EPIPE;
    return -1;
}

/* Receives what is there: bytes read, 0 when the server closed, or -1 with errno as send_some. */
static ssize_t receive_some(struct connection *connection, char *buffer, size_t capacity) {
    if (connection->session == NULL) {
        return recv(connection->fd, buffer, capacity, 0);
    }
    ssize_t count = gnutls_record_recv(connection->session, buffer, capacity);
    if (count >= 0) {
        return count;
    }
    errno = count == GNUTLS_E_AGAIN ? EAGAIN : count == GNUTLS_E_INTERRUPTED ? EINTR : ECONNRESET;
    return -1;
}

static void write_pending(struct run *run, struct connection *connection) {
    while (connection->pending_length > 0) {
        ssize_t written = send_some(connection, connection->pending, connection->pending_length);
        if (written < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return; /* EPOLLOUT will say when to go on */
            }
            if (errno == EINTR) {
                continue;
            }
            run->result->write_errors++;
            close_connection(run, connection, now_us());
            return;
        }
        connection->pending += written;
        connection->pending_length -= (size_t)written;
    }
    connection->state = CONNECTION_RECEIVING;
}

static void send_request(struct run *run, struct connection *connection, uint64_t now) {
    char *body = connection->request + HEADROOM;
    char *end = put_body(&run->generator, body, run->options->batch);
    size_t body_length = (size_t)(end - body);
    char length_line[64];
    int length_line_length = snprintf(length_line, sizeof length_line, "Content-Length: %zu\r\n\r\n", body_length);
    size_t header_length = run->header_prefix_length + (size_t)length_line_length;
    char *start = body - header_length;
    memcpy(start, run->header_prefix, run->header_prefix_length);
    memcpy(start + run->header_prefix_length, length_line, (size_t)length_line_length);
    connection->pending = start;
    connection->pending_length = header_length + body_length;
    connection->sent_at_us = now;
    if (run->first_sent_us == 0) {
        run->first_sent_us = now;
    }
    connection->state = CONNECTION_SENDING;
    write_pending(run, connection);
}

/* The value of a JSON number field `"name":123` in `body`, or 0. */
static uint64_t number_field(const char *body, size_t length, const char *name) {
    size_t name_length = strlen(name);
    const char *found = memmem(body, length, name, name_length);
    if (found == NULL) {
        return 0;
    }
    const char *cursor = found + name_length;
    const char *end = body + length;
    uint64_t value = 0;
    while (cursor < end && *cursor >= '0' && *cursor <= '9') {
        value = value * 10 + (uint64_t)(*cursor - '0');
        cursor++;
    }
    return value;
}

/* Case-insensitive search for a header line's value within the header block. */
static const char *header_value(const char *headers, size_t length, const char *name, size_t *value_length) {
    size_t name_length = strlen(name);
    const char *line = memchr(headers, '\n', length); /* skip the status line */
    const char *end = headers + length;
    while (line != NULL && line + 1 < end) {
        line++;
        const char *line_end = memchr(line, '\n', (size_t)(end - line));
        if (line_end == NULL) {
            line_end = end;
        }
        if ((size_t)(line_end - line) > name_length && strncasecmp(line, name, name_length) == 0 && line[name_length] == ':') {
            const char *value = line + name_length + 1;
            while (value < line_end && (*value == ' ' || *value == '\t')) {
                value++;
            }
            const char *value_end = line_end;
            while (value_end > value && (value_end[-1] == '\r' || value_end[-1] == ' ')) {
                value_end--;
            }
            *value_length = (size_t)(value_end - value);
            return value;
        }
        line = line_end < end ? line_end : NULL;
    }
    return NULL;
}

/* Handles a complete answer at the start of the connection's buffer, if there is one. Returns 1
   when one was handled. */
static int take_answer(struct run *run, struct connection *connection, uint64_t now) {
    const char *answer = connection->answer;
    const char *header_end = memmem(answer, connection->answer_length, "\r\n\r\n", 4);
    if (header_end == NULL) {
        return 0;
    }
    size_t header_length = (size_t)(header_end - answer) + 4;
    size_t value_length = 0;
    const char *length_value = header_value(answer, header_length, "Content-Length", &value_length);
    if (length_value == NULL || connection->answer_length < 12 || memcmp(answer, "HTTP/1.", 7) != 0) {
        run->result->read_errors++; /* engage always sends Content-Length */
        close_connection(run, connection, now);
        return 1;
    }
    size_t content_length = (size_t)strtoull(length_value, NULL, 10);
    if (connection->answer_length < header_length + content_length) {
        return 0;
    }
    int status = (answer[9] - '0') * 100 + (answer[10] - '0') * 10 + (answer[11] - '0');
    const char *body = answer + header_length;
    struct CLoadGenerator_Result *result = run->result;
    result->requests++;
    uint64_t latency = now - connection->sent_at_us;
    int bucket = bucket_of(latency);
    run->histogram[bucket < HISTOGRAM_BUCKETS ? bucket : HISTOGRAM_BUCKETS - 1]++;
    run->latency_sum_us += latency;
    record_latency(run, connection->sent_at_us, latency, status);
    if (latency > result->max_us) {
        result->max_us = latency;
    }
    run->last_answer_us = now;
    if (status == 200) {
        result->accepted += number_field(body, content_length, "\"accepted\":");
        result->duplicates += number_field(body, content_length, "\"duplicates\":");
    } else {
        result->non200++;
        if (result->first_problem[0] == '\0') {
            size_t shown = content_length < 200 ? content_length : 200;
            snprintf(result->first_problem, sizeof result->first_problem, "%d %.*s", status, (int)shown, body);
        }
    }
    size_t connection_length = 0;
    const char *connection_value = header_value(answer, header_length, "Connection", &connection_length);
    int closing = connection_value != NULL && connection_length == 5 && strncasecmp(connection_value, "close", 5) == 0;
    if (closing || connection->answer_length != header_length + content_length) {
        /* Closed by the server, or bytes nobody asked for: start over on a new connection. */
        if (!closing) {
            result->read_errors++;
        }
        close_connection(run, connection, now);
        return 1;
    }
    if (connection->pending_length > 0) {
        /* Answered before the whole request was written (a refusal): the rest of it would be read
           as the start of the next request, so start over on a new connection. */
        close_connection(run, connection, now);
        return 1;
    }
    connection->answer_length = 0;
    make_idle(run, connection, now);
    return 1;
}

static void read_answer(struct run *run, struct connection *connection, uint64_t now) {
    for (;;) {
        if (connection->answer_length == connection->answer_capacity) {
            size_t capacity = connection->answer_capacity * 2;
            char *grown = capacity <= (64u << 20) ? realloc(connection->answer, capacity) : NULL;
            if (grown == NULL) {
                run->result->read_errors++;
                close_connection(run, connection, now);
                return;
            }
            connection->answer = grown;
            connection->answer_capacity = capacity;
        }
        size_t room = connection->answer_capacity - connection->answer_length;
        ssize_t count = receive_some(connection, connection->answer + connection->answer_length, room);
        if (count < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                /* An error only if an answer was owed (an idle connection may be reset). */
                if (connection->state == CONNECTION_RECEIVING || connection->state == CONNECTION_SENDING) {
                    run->result->read_errors++;
                }
                close_connection(run, connection, now);
            }
            return;
        }
        if (count == 0) {
            /* Closed by the server: an error only if an answer was owed. */
            if (connection->state == CONNECTION_RECEIVING || connection->state == CONNECTION_SENDING) {
                run->result->read_errors++;
            }
            close_connection(run, connection, now);
            return;
        }
        connection->answer_length += (size_t)count;
        if (connection->state != CONNECTION_RECEIVING) {
            /* An answer before the request was complete (e.g. 413): take it once it is whole. */
            if (connection->state != CONNECTION_SENDING) {
                run->result->read_errors++;
                close_connection(run, connection, now);
                return;
            }
        }
        if (take_answer(run, connection, now)) {
            return;
        }
        /* A short read drained the socket; the next arrival raises a new edge. (A TLS read returns
           one record at a time, so HTTPS reads on until the session says EAGAIN.) */
        if ((size_t)count < room && connection->session == NULL) {
            return;
        }
    }
}

static void handle_event(struct run *run, struct connection *connection, uint32_t events, uint64_t now) {
    if (connection->state == CONNECTION_CONNECTING) {
        int error = 0;
        socklen_t length = sizeof error;
        if ((events & (EPOLLERR | EPOLLHUP)) ||
            getsockopt(connection->fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
            run->result->connect_errors++;
            close_connection(run, connection, now + 100000);
            return;
        }
        if (!(events & EPOLLOUT)) {
            return;
        }
        connected(run, connection, now);
        return;
    }
    if (connection->state == CONNECTION_HANDSHAKING) {
        if (events & (EPOLLERR | EPOLLHUP)) {
            run->result->connect_errors++;
            close_connection(run, connection, now + 100000);
        } else {
            continue_handshake(run, connection, now);
        }
        return;
    }
    if (connection->state == CONNECTION_SENDING && (events & EPOLLOUT)) {
        write_pending(run, connection);
    }
    if (connection->state != CONNECTION_CLOSED && (events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP))) {
        read_answer(run, connection, now);
    }
}

/* ------------------------------------------------------------------------------------------ */

static int fail(char *error, size_t capacity, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error, capacity, format, arguments);
    va_end(arguments);
    return -1;
}

static void finish_result(struct run *run) {
    struct CLoadGenerator_Result *result = run->result;
    uint64_t total = 0;
    for (int bucket = 0; bucket < HISTOGRAM_BUCKETS; bucket++) {
        total += run->histogram[bucket];
    }
    uint64_t targets[3] = {(total * 50 + 99) / 100, (total * 90 + 99) / 100, (total * 99 + 99) / 100};
    uint64_t *values[3] = {&result->p50_us, &result->p90_us, &result->p99_us};
    uint64_t seen = 0;
    int next = 0;
    for (int bucket = 0; bucket < HISTOGRAM_BUCKETS && next < 3; bucket++) {
        seen += run->histogram[bucket];
        while (next < 3 && total > 0 && seen >= targets[next]) {
            *values[next++] = bucket_value(bucket);
        }
    }
    result->mean_us = total > 0 ? (double)run->latency_sum_us / (double)total : 0;
    uint64_t end = run->last_answer_us > run->first_sent_us ? run->last_answer_us : run->first_sent_us;
    result->duration_us = end - run->first_sent_us;
}

int CLoadGenerator_run(const struct CLoadGenerator_Options *options, struct CLoadGenerator_Result *result,
                       char *error, size_t error_capacity) {
    memset(result, 0, sizeof *result);
    if (options->connections == 0 || options->connections > 10000) {
        return fail(error, error_capacity, "connections must be 1-10000");
    }
    if (options->batch == 0 || options->batch > 1000) {
        return fail(error, error_capacity, "batch must be 1-1000");
    }
    if (!(options->seconds > 0) || !(options->timeout_seconds > 0)) {
        return fail(error, error_capacity, "seconds and timeout must be positive");
    }
    if (!(options->rate == 0 || (options->rate >= 0.01 && options->rate <= 10000000))) {
        return fail(error, error_capacity, "rate must be 0 (unpaced) or 0.01-10000000 requests/s");
    }
    struct run run;
    memset(&run, 0, sizeof run);
    run.options = options;
    run.result = result;
    run.address.sin_family = AF_INET;
    run.address.sin_port = htons(options->port);
    if (inet_pton(AF_INET, options->host, &run.address.sin_addr) != 1) {
        return fail(error, error_capacity, "host is not a numeric IPv4 address");
    }
    int prefix = snprintf(run.header_prefix, sizeof run.header_prefix,
                          "POST %s HTTP/1.1\r\nHost: %s:%u\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n",
                          options->path, options->host, (unsigned)options->port, options->key);
    if (prefix < 0 || (size_t)prefix >= sizeof run.header_prefix || (size_t)prefix + 64 > HEADROOM) {
        return fail(error, error_capacity, "the path or key is too long");
    }
    run.header_prefix_length = (size_t)prefix;
    run.body_capacity = (size_t)options->batch * 700 + 2;
    run.generator.tag = options->tag % 4096;
    run.generator.stream = options->stream % 4096;
    run.generator.random_ids = options->random_ids;
    run.generator.random_state = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)options->tag << 32) ^ options->stream ^ now_us();
    run.interval_us = options->rate > 0 ? 1e6 / options->rate : 0;

    int status = -1;
    run.generator.variants = calloc(VARIANTS, sizeof *run.generator.variants);
    run.histogram = calloc(HISTOGRAM_BUCKETS, sizeof *run.histogram);
    run.connections = calloc(options->connections, sizeof *run.connections);
    if (run.connections != NULL) {
        for (uint32_t i = 0; i < options->connections; i++) {
            run.connections[i].fd = -1; /* calloc's 0 is standard input */
        }
    }
    run.epoll = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event *events = calloc(options->connections, sizeof *events);
    if (run.generator.variants == NULL || run.histogram == NULL || run.connections == NULL || events == NULL || run.epoll < 0) {
        fail(error, error_capacity, "out of memory or descriptors");
        goto done;
    }
    make_variants(run.generator.variants);
    if (options->latency_file != NULL) {
        run.latencies = fopen(options->latency_file, "w");
        if (run.latencies == NULL) {
            fail(error, error_capacity, "cannot write %s: %s", options->latency_file, strerror(errno));
            goto done;
        }
        setvbuf(run.latencies, NULL, _IOFBF, 1 << 20);
        struct timespec unix_now;
        clock_gettime(CLOCK_REALTIME, &unix_now);
        uint64_t monotonic_now = now_us();
        run.unix_offset_us = (int64_t)unix_now.tv_sec * 1000000 + unix_now.tv_nsec / 1000 - (int64_t)monotonic_now;
    }
    if (options->tls_ca_file != NULL) {
        if (gnutls_certificate_allocate_credentials(&run.tls_credentials) < 0) {
            fail(error, error_capacity, "out of memory");
            goto done;
        }
        int loaded = gnutls_certificate_set_x509_trust_file(run.tls_credentials, options->tls_ca_file, GNUTLS_X509_FMT_PEM);
        if (loaded <= 0) {
            fail(error, error_capacity, "no CA certificate in %s: %s", options->tls_ca_file,
                 loaded < 0 ? gnutls_strerror(loaded) : "the file holds none");
            goto done;
        }
    }
    for (uint32_t i = 0; i < options->connections; i++) {
        struct connection *connection = &run.connections[i];
        connection->request = malloc(HEADROOM + run.body_capacity);
        connection->answer_capacity = 4096;
        connection->answer = malloc(connection->answer_capacity);
        if (connection->request == NULL || connection->answer == NULL) {
            fail(error, error_capacity, "out of memory");
            goto done;
        }
        open_connection(&run, connection);
    }

    uint64_t start = now_us();
    uint64_t stop_sending = start + (uint64_t)(options->seconds * 1e6);
    uint64_t timeout_us = (uint64_t)(options->timeout_seconds * 1e6);
    uint64_t give_up = stop_sending + timeout_us;
    run.next_sweep_us = start;
    run.next_slot_us = (double)start;
    for (;;) {
        uint64_t now = now_us();
        int sending = now < stop_sending;
        int busy = 0;
        uint64_t wake = sending ? stop_sending : give_up;
        if (now >= run.next_sweep_us || run.interval_us > 0 || !sending) {
            /* Timeouts, reconnects and paced sends: a pass over all connections. */
            for (uint32_t i = 0; i < options->connections; i++) {
                struct connection *connection = &run.connections[i];
                switch (connection->state) {
                case CONNECTION_CLOSED:
                    if (sending && now >= connection->retry_at_us) {
                        open_connection(&run, connection);
                    } else if (sending && connection->retry_at_us < wake) {
                        wake = connection->retry_at_us;
                    }
                    break;
                case CONNECTION_CONNECTING:
                case CONNECTION_HANDSHAKING:
                    busy = 1;
                    break;
                case CONNECTION_IDLE:
                    if (sending && connection->due_us <= now) {
                        send_request(&run, connection, now);
                        busy = busy || connection->state != CONNECTION_CLOSED;
                    } else if (sending && connection->due_us < wake) {
                        wake = connection->due_us;
                    }
                    break;
                case CONNECTION_SENDING:
                case CONNECTION_RECEIVING:
                    if (now - connection->sent_at_us > timeout_us) {
                        result->timeouts++;
                        record_latency(&run, connection->sent_at_us, now - connection->sent_at_us, 0);
                        close_connection(&run, connection, now);
                    } else {
                        busy = 1;
                    }
                    break;
                }
            }
            if (now >= run.next_sweep_us) {
                run.next_sweep_us = now + 100000;
            }
            if (!sending && !busy) {
                break;
            }
            if (now >= give_up) {
                break;
            }
        }
        if (sending && run.successful_connects == 0 && now - start > 5000000) {
            fail(error, error_capacity, "could not connect to %s:%u within 5 s", options->host, (unsigned)options->port);
            goto done;
        }
        if (sending && run.next_sweep_us < wake) {
            wake = run.next_sweep_us;
        }
        int wait_ms = wake > now ? (int)((wake - now + 999) / 1000) : 0;
        int ready = epoll_wait(run.epoll, events, (int)options->connections, wait_ms);
        if (ready < 0 && errno != EINTR) {
            fail(error, error_capacity, "epoll_wait: %s", strerror(errno));
            goto done;
        }
        now = now_us();
        for (int i = 0; i < ready; i++) {
            struct connection *connection = events[i].data.ptr;
            handle_event(&run, connection, events[i].events, now);
            /* Unpaced: the next request goes out as soon as the connection is free. */
            if (connection->state == CONNECTION_IDLE && run.interval_us == 0 && now < stop_sending) {
                send_request(&run, connection, now);
            }
        }
    }
    finish_result(&run);
    status = 0;

done:
    if (run.connections != NULL) {
        for (uint32_t i = 0; i < options->connections; i++) {
            if (run.connections[i].session != NULL) {
                gnutls_deinit(run.connections[i].session);
            }
            if (run.connections[i].fd >= 0) {
                close(run.connections[i].fd);
            }
            free(run.connections[i].request);
            free(run.connections[i].answer);
        }
    }
    if (run.epoll >= 0) {
        close(run.epoll);
    }
    if (run.tls_credentials != NULL) {
        gnutls_certificate_free_credentials(run.tls_credentials);
    }
    if (run.latencies != NULL) {
        int failed = ferror(run.latencies);
        if (fclose(run.latencies) != 0 || failed) {
            if (status == 0) {
                status = fail(error, error_capacity, "writing %s failed", options->latency_file);
            }
        }
    }
    free(events);
    free(run.connections);
    free(run.histogram);
    free(run.generator.variants);
    return status;
}
