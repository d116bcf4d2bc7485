#ifndef ENGAGE_CLOADGENERATOR_H
#define ENGAGE_CLOADGENERATOR_H

#include <stddef.h>
#include <stdint.h>

/// `engage bench ingest`'s HTTP load: POST /v1/events with generated `delivered` events over
/// keep-alive connections from one epoll thread, so that the load costs the machine it shares
/// with the server as little as possible. The events are those of Benchmarks/wrk/batch.lua
/// (the same 997 variants and formulas), so one baseline of `\copy` rows serves both.
struct CLoadGenerator_Options {
    /// Numeric IPv4 address.
    const char *host;
    uint16_t port;
    const char *path;
    /// The ingest key, sent as `Authorization: Bearer <key>`.
    const char *key;
    uint32_t connections;
    /// Events per request, 1-1000.
    uint32_t batch;
    /// How long requests are sent; the ones in flight then are still awaited (up to the timeout).
    double seconds;
    /// Requests per second over all connections; 0 sends each next request as soon as the
    /// previous one on the connection was answered.
    double rate;
    /// 0-4095, distinguishes the event ids of one run's phases.
    uint32_t tag;
    /// 0-4095, distinguishes generators running side by side.
    uint32_t stream;
    /// 0: time-ordered ids (UUIDv7 layout, as EngageClient makes them); 1: random (v4 layout).
    int random_ids;
    /// A request unanswered this long counts as a timeout and its connection is reopened.
    double timeout_seconds;
    /// HTTPS when not NULL: a PEM file of the CA certificates the server's certificate must chain
    /// to (for `host`). Each connection does one handshake (GnuTLS), then carries requests.
    const char *tls_ca_file;
    /// When not NULL: a file written anew with one line per request answered or timed out,
    /// `<sent> <latency> <status>`: when its first byte was written (microseconds since the Unix
    /// epoch), its latency in microseconds (as the percentiles count it, unbucketed; for a timeout
    /// the time waited) and the answer's HTTP status (0: timed out). Lets runs that follow each
    /// other be merged into percentiles over any span of time.
    const char *latency_file;
};

struct CLoadGenerator_Result {
    /// Requests answered (any status).
    uint64_t requests;
    /// Summed from the `accepted` and `duplicates` fields of 200 responses.
    uint64_t accepted;
    uint64_t duplicates;
    uint64_t non200;
    uint64_t connect_errors;
    uint64_t read_errors;
    uint64_t write_errors;
    uint64_t timeouts;
    /// From the first request until the last answer.
    uint64_t duration_us;
    /// Latency from a request's first byte written to its answer's last byte read.
    uint64_t p50_us;
    uint64_t p90_us;
    uint64_t p99_us;
    uint64_t max_us;
    double mean_us;
    /// Status and start of the first non-200 answer, if any.
    char first_problem[256];
};

/// Runs the load to completion. Returns 0, or -1 with a message in `error` when the load could
/// not run at all (bad options, no connection could ever be made, out of memory).
int CLoadGenerator_run(const struct CLoadGenerator_Options *options, struct CLoadGenerator_Result *result,
                       char *error, size_t error_capacity);

#endif
