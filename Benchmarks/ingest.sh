#!/usr/bin/env bash
# Ingestion load benchmark (issue 3's targets); prints a markdown table for BENCHMARKS.md.
#
#   Benchmarks/ingest.sh                        build release, run every phase (about 2.5 minutes)
#   BUILD=0 Benchmarks/ingest.sh                use .build/release/engage as it is
#   MODE=soak Benchmarks/ingest.sh              issue 7's sustained run (about 11 minutes), see below
#   MODE=compare COMPARE_FLAGS='--parallel-commit-events 0' Benchmarks/ingest.sh
#   MODE=compare COMPARE_BIN=/path/to/older/engage Benchmarks/ingest.sh
#                                               one phase on two server settings, alternately
#   MODE=compare COMPARE_TLS=1 COMPARE_PHASE='A C' Benchmarks/ingest.sh
#                                               phases A and C over HTTPS against plain HTTP
#   TLS=1 Benchmarks/ingest.sh                  every phase over HTTPS
#   ENGAGE_BIN=/path/engage DURATION=10 Benchmarks/ingest.sh
#
# In one run, on a fresh local PostgreSQL in a new directory under /var/tmp:
#   baseline  psql \copy of COPY_ROWS rows of the same events into `events`, one connection,
#             median of COPY_ROUNDS rounds; with the partitioned log (migration 010) their ids
#             into `event_ids` first, in the same transaction, as engage stores them
#   A         BATCH-event POSTs over CONNECTIONS keep-alive connections, as fast as they go;
#             with ALSO_RANDOM=1 the baseline and A again with random ids, reported beside
#   B         the same at half of A's stored rate, paced (each request takes the next free slot)
#   C         single-event POSTs over SINGLE_CONNECTIONS connections
# Every phase starts from an empty log (TRUNCATE, VACUUM, CHECKPOINT) and is measured by
# `SELECT count(*) FROM events` before and after, not only by what the load generator saw. The
# engage process's VmRSS is sampled every 0.25 s throughout. The server is stopped with SIGTERM at the end and
# must exit 0. Progress goes to stderr, the report to stdout. Ctrl-C or SIGTERM stops everything
# it started (the server, its PostgreSQL, the load) and removes the run's directory.
#
# Soak mode (MODE=soak) measures phase A's unpaced rate for DURATION s, then holds half of it
# for SOAK_MINUTES one-minute windows without emptying the log, and reports per window the
# accepted rate, latency percentiles, failed requests and engage's VmRSS; then it checks that
# every acknowledged event is stored (count(*) at least the sum of accepted; more only by requests
# cut off when a window's load stopped) and that VmRSS grew less
# than 10% from the end of the first window (the warm-up) to the end of the last.
#
# Settings (environment):
#   MODE=targets         targets (the phases above), soak or compare
#   COMPARE_FLAGS        compare mode: `engage serve` flags of the second server
#   COMPARE_BIN          compare mode: the second server's executable (another build); this
#                        or COMPARE_FLAGS (or both) is required. The load is always ENGAGE_BIN's.
#                        Its server runs on a database of its own (the builds' schemas may differ).
#   COMPARE_TLS=0        compare mode: 1 makes the second server serve HTTPS (TLS 1.3 with the
#                        run's own ECDSA P-256 certificate; the load verifies it), the first plain
#                        HTTP; COMPARE_FLAGS and COMPARE_BIN may still be added
#   COMPARE_PHASE=C      compare mode: the phases measured, A, C or 'A C' (each round both)
#   COMPARE_ROUNDS=5     compare mode: pairs of measurements, 1-20
#   COMPARE_IDLE=0       compare mode: connections held open and silent during each measurement
#                        (python3 holds them; both servers then run with --idle-timeout 120), as
#                        clients that keep connections open between their requests leave them
#   SOAK_MINUTES=10      windows of the soak, 2-120
#   BUILD=1              run `swift build -c release` first (ignored when ENGAGE_BIN is set)
#   ENGAGE_BIN           engage executable (default: the package's release build)
#   LOAD=engage          load generator: engage (`engage bench ingest`, one epoll thread in C) or
#                        wrk (wrk/batch.lua); both send the same events, engage at about half
#                        of wrk's CPU per request, which matters as it shares the server's cores.
#                        Over HTTPS both keep their connections, so a handshake is paid once per
#                        connection, not per request; engage verifies the certificate, wrk does not
#   TLS=0                1: the server serves HTTPS (targets and soak modes), with a certificate
#                        made for the run by openssl
#   DURATION=20          seconds of each load phase, 1-30
#   WARMUP=3             seconds of unmeasured load before phase A, 0-30 (0: none)
#   THREADS=2            wrk threads (LOAD=wrk)
#   CONNECTIONS=16       connections of phases A and B
#   BATCH=100            events per request in phases A and B
#   SINGLE_CONNECTIONS=64  connections of phase C
#   COPY_ROWS=300000     rows of each \copy round; COPY_ROUNDS=3 rounds
#   ALSO_RANDOM=1        targets mode: also the baseline and phase A with random ids (0: not)
#   IDS=time             event ids of every phase and of the \copy rows: time (time-ordered, as
#                        EngageClient makes them) or random (as v4 UUIDs from other clients)
#   HTTP_THREADS, COMMITTERS, POOL_SIZE, PARALLEL_COMMIT_EVENTS   passed to `engage serve` when set
#   PORT=0               port to listen on (0: a free one, chosen by the server)
#   WORK_PARENT=/var/tmp where the run's directory (data dir, logs, rows) is made
#   KEEP_WORK=0          1 keeps that directory for inspection
#   STRICT=0             1 exits 2 when a target is missed
#   PSQL=psql WRK=wrk    client programs
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH="$ROOT/Benchmarks"

BUILD=${BUILD:-1}
MODE=${MODE:-targets}
SOAK_MINUTES=${SOAK_MINUTES:-10}
COMPARE_FLAGS=${COMPARE_FLAGS:-}
COMPARE_BIN=${COMPARE_BIN:-}
COMPARE_PHASE=${COMPARE_PHASE:-C}
COMPARE_ROUNDS=${COMPARE_ROUNDS:-5}
COMPARE_IDLE=${COMPARE_IDLE:-0}
COMPARE_TLS=${COMPARE_TLS:-0}
TLS=${TLS:-0}
ENGAGE_BIN=${ENGAGE_BIN:-}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-3}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-16}
BATCH=${BATCH:-100}
SINGLE_CONNECTIONS=${SINGLE_CONNECTIONS:-64}
COPY_ROWS=${COPY_ROWS:-300000}
COPY_ROUNDS=${COPY_ROUNDS:-3}
IDS=${IDS:-time}
ALSO_RANDOM=${ALSO_RANDOM:-1}
HTTP_THREADS=${HTTP_THREADS:-}
COMMITTERS=${COMMITTERS:-}
POOL_SIZE=${POOL_SIZE:-}
PARALLEL_COMMIT_EVENTS=${PARALLEL_COMMIT_EVENTS:-}
PORT=${PORT:-0}
WORK_PARENT=${WORK_PARENT:-/var/tmp}
KEEP_WORK=${KEEP_WORK:-0}
STRICT=${STRICT:-0}
PSQL=${PSQL:-psql}
WRK=${WRK:-wrk}
LOAD=${LOAD:-engage}
if [[ $LOAD == engage ]]; then LOAD_NAME="bench ingest"; else LOAD_NAME=wrk; fi

# Issue 3's targets.
TARGET_A_EPS=130000
TARGET_A_RATIO=0.9
TARGET_B_P99_MS=25
TARGET_C_EPS=35000
TARGET_RSS_MB=150

APP=ingest-bench
COPY_COLUMNS="event_id, app_id, notification_id, type, category, device_id, occurred_at, experiment_id, experiment_arm, payload"

SCRIPT=ingest.sh
USAGE="[BUILD=0] [ENGAGE_BIN=path] [DURATION=s] ... Benchmarks/ingest.sh (settings in the header)"
# shellcheck source=Benchmarks/common.sh
source "$ROOT/Benchmarks/common.sh"
require_int DURATION "$DURATION" 1 30
[[ $LOAD == engage || $LOAD == wrk ]] || usage_error "LOAD=$LOAD: expected engage or wrk"
[[ $IDS == time || $IDS == random ]] || usage_error "IDS=$IDS: expected time or random"
[[ $ALSO_RANDOM == 0 || $ALSO_RANDOM == 1 ]] || usage_error "ALSO_RANDOM=$ALSO_RANDOM: expected 0 or 1"
[[ $MODE == targets || $MODE == soak || $MODE == compare ]] || usage_error "MODE=$MODE: expected targets, soak or compare"
[[ $TLS == 0 || $TLS == 1 ]] || usage_error "TLS=$TLS: expected 0 or 1"
[[ $COMPARE_TLS == 0 || $COMPARE_TLS == 1 ]] || usage_error "COMPARE_TLS=$COMPARE_TLS: expected 0 or 1"
[[ $MODE != compare || $TLS == 0 ]] || usage_error "TLS=1 is for targets and soak; compare mode takes COMPARE_TLS=1"
[[ $MODE != compare || -n $COMPARE_FLAGS || -n $COMPARE_BIN || $COMPARE_TLS == 1 ]] \
    || usage_error "MODE=compare needs COMPARE_FLAGS (engage serve flags to compare against), COMPARE_BIN (another engage executable) or COMPARE_TLS=1"
[[ -z $COMPARE_BIN || -x $COMPARE_BIN ]] || usage_error "COMPARE_BIN=$COMPARE_BIN: not an executable"
read -r -a COMPARE_PHASES <<<"$COMPARE_PHASE"
(( ${#COMPARE_PHASES[@]} > 0 )) || usage_error "COMPARE_PHASE is empty: expected A, C or 'A C'"
for phase in "${COMPARE_PHASES[@]}"; do
    [[ $phase == A || $phase == C ]] || usage_error "COMPARE_PHASE=$COMPARE_PHASE: expected A, C or 'A C'"
done
require_int COMPARE_ROUNDS "$COMPARE_ROUNDS" 1 20
require_int COMPARE_IDLE "$COMPARE_IDLE" 0 5000
require_int SOAK_MINUTES "$SOAK_MINUTES" 2 120
require_int WARMUP "$WARMUP" 0 30
require_int THREADS "$THREADS" 1 64
require_int CONNECTIONS "$CONNECTIONS" "$THREADS" 10000
require_int SINGLE_CONNECTIONS "$SINGLE_CONNECTIONS" "$THREADS" 10000
require_int BATCH "$BATCH" 1 1000
require_int COPY_ROWS "$COPY_ROWS" 1000 10000000
require_int COPY_ROUNDS "$COPY_ROUNDS" 1 9
require_int PORT "$PORT" 0 65535
for name in HTTP_THREADS COMMITTERS POOL_SIZE; do
    [[ -z ${!name} ]] || require_int "$name" "${!name}" 1 200
done
load_programs=()
[[ $LOAD != wrk ]] || load_programs=("$WRK")
[[ $TLS == 0 && $COMPARE_TLS == 0 ]] || load_programs+=(openssl)
for program in "$PSQL" "${load_programs[@]}" awk curl; do
    command -v "$program" >/dev/null || die "$program not found (scripts/install-deps --bench installs wrk and psql)"
done

WORK="" SERVER_PID="" SAMPLER_PID="" LOAD_PID=""

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [[ -n $LOAD_PID ]] && kill -0 "$LOAD_PID" 2>/dev/null; then kill "$LOAD_PID" 2>/dev/null || true; wait "$LOAD_PID" 2>/dev/null || true; fi
    if [[ -n ${IDLE_PID:-} ]]; then kill "$IDLE_PID" 2>/dev/null || true; wait "$IDLE_PID" 2>/dev/null || true; fi
    if [[ -n $SAMPLER_PID ]]; then kill "$SAMPLER_PID" 2>/dev/null || true; wait "$SAMPLER_PID" 2>/dev/null || true; fi
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        log "stopping engage (pid $SERVER_PID)"
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 300); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$SERVER_PID" 2>/dev/null; then log "engage ignored SIGTERM for 30 s; killing it"; kill -KILL "$SERVER_PID" 2>/dev/null || true; fi
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [[ -n $WORK && -f $WORK/pg/postmaster.pid && -n $ENGAGE_BIN ]]; then
        log "stopping the benchmark's PostgreSQL"
        "$ENGAGE_BIN" db stop --data-dir "$WORK/pg" >/dev/null 2>&1 || log "could not stop PostgreSQL in $WORK/pg"
    fi
    if [[ -n $WORK && -f $WORK/pg-other/postmaster.pid && -n $COMPARE_BIN ]]; then
        "$COMPARE_BIN" db stop --data-dir "$WORK/pg-other" >/dev/null 2>&1 || log "could not stop PostgreSQL in $WORK/pg-other"
    fi
    if [[ -n $WORK && -d $WORK ]]; then
        # Kept when asked, or after a failure (not after an interruption) for its logs.
        if [[ $KEEP_WORK == 1 || ($status -ne 0 && $status -ne 130 && $status -ne 143) ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
    fi
    exit "$status"
}
set -E
trap_cleanup

# ---------------------------------------------------------------------------------------------
# Helpers

ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
now_ns() { date +%s%N; }

verdict() { if [[ $1 == 0 ]]; then echo "met"; else echo "**missed**"; fi; }

sql() { "$PSQL" "$CONNINFO" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
# The partitioned log (migration 010) keeps its ids in event_ids; a build from before does not.
has_event_ids() { [[ $(sql -c "SELECT to_regclass('event_ids') IS NOT NULL") == t ]]; }
reset_log() {
    local tables=events
    if has_event_ids; then tables="events, event_ids"; fi
    sql -c "TRUNCATE $tables" -c "VACUUM ANALYZE events" -c "CHECKPOINT" >/dev/null
}
count_events() { sql -c "SELECT count(*) FROM events"; }
row_bytes() { sql -c "SELECT coalesce(avg(pg_column_size(e.*)), 0)::int FROM events e"; }

# CPU ticks: the engage process; PostgreSQL (postmaster and its children); all CPUs busy/total/
# stolen (busy includes steal: time the hypervisor gave to other guests, which no process here used).
CLK_TCK=$(getconf CLK_TCK)
engage_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/stat"; }
postgres_ticks() {
    local postmaster
    postmaster=$(head -1 "${SERVER_DATA_DIR:-$WORK/pg}/postmaster.pid" 2>/dev/null) || { echo 0; return; }
    # Field 2 (comm) has no spaces for postgres processes; 4 is the parent, 14/15 user/system.
    { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v pm="$postmaster" '$1 == pm || $4 == pm { t += $14 + $15 } END { print t + 0 }'
}
machine_ticks() { awk '/^cpu / { busy = $2 + $3 + $4 + $7 + $8 + $9; total = busy + $5 + $6; print busy, total, $9 }' /proc/stat; }

# CPU seconds of the shell's reaped children in a file written by `times`.
children_seconds() {
    awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, part, "m"); sub("s", "", part[2]); total += part[1] * 60 + part[2] } }
         END { printf "%.3f", total }' "$1"
}

# Value of key=value in the result line of a load output file (wrk.result or ingest.result).
result() { sed -n 's/^[a-z]*\.result .*\<'"$2"'=\([^ ]*\).*/\1/p' "$1" | tail -1; }

# Stops engage with SIGTERM, as an operator would; sets SERVER_STATUS to its exit status.
stop_server() {
    log "stopping engage with SIGTERM"
    kill -TERM "$SERVER_PID"
    for _ in $(seq 600); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$SERVER_PID" 2>/dev/null && die "engage still runs 60 s after SIGTERM"
    SERVER_STATUS=0
    wait "$SERVER_PID" || SERVER_STATUS=$?
    SERVER_PID=""
}

# run_load NAME CONNECTIONS BATCH RATE TAG SECONDS: one load run (RATE 0: unpaced) with the LOAD
# generator, output in $WORK/load-NAME.txt.
run_load() {
    local name=$1 connections=$2 batch=$3 rate=$4 tag=$5 seconds=$6
    times >"$WORK/times-$name.0" # the shell's children's CPU so far: the generator's is the difference
    local trust=()
    [[ $URL != https:* ]] || trust=(--cacert "$WORK/tls/ca.pem")
    if [[ $LOAD == engage ]]; then
        ENGAGE_BENCH_KEY=$KEY "$ENGAGE_BIN" bench ingest --url "$URL" "${trust[@]}" --connections "$connections" --batch "$batch" \
            --rate "$rate" --tag "$tag" --ids "${LOAD_IDS:-$IDS}" --seconds "$seconds" --timeout 10 \
            >"$WORK/load-$name.txt" 2>&1 &
    else
        INGEST_KEY=$KEY INGEST_BATCH=$batch INGEST_RATE=$rate INGEST_TAG=$tag INGEST_THREADS=$THREADS INGEST_IDS=${LOAD_IDS:-$IDS} \
            "$WRK" -t"$THREADS" -c"$connections" -d"${seconds}s" --timeout 10s -s "$BENCH/wrk/batch.lua" "$URL" \
            >"$WORK/load-$name.txt" 2>&1 &
    fi
    LOAD_PID=$!
    local status=0
    wait "$LOAD_PID" || status=$?
    times >"$WORK/times-$name.1"
    LOAD_PID=""
    [[ $status == 0 ]] || { cat "$WORK/load-$name.txt" >&2; die "$LOAD failed in phase $name (exit $status)"; }
    grep -q '^[a-z]*\.result ' "$WORK/load-$name.txt" || { cat "$WORK/load-$name.txt" >&2; die "$LOAD printed no result in phase $name"; }
    if grep -q '^[a-z]*\.problem ' "$WORK/load-$name.txt"; then log "phase $name: $(grep '^[a-z]*\.problem ' "$WORK/load-$name.txt" | head -1)"; fi
}

# hold_idle_connections N: N connections to the server that send nothing, until released.
IDLE_PID=""
hold_idle_connections() {
    local ready="$WORK/idle-ready"
    rm -f "$ready"
    python3 - "${URL##*:}" "$1" "$ready" <<'PYTHON' &
import socket, sys, time
port, count, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
open(ready, "w").close()
time.sleep(3600)
PYTHON
    IDLE_PID=$!
    for _ in $(seq 300); do [[ -f $ready ]] && return; kill -0 "$IDLE_PID" 2>/dev/null || break; sleep 0.1; done
    die "could not open $1 idle connections"
}
release_idle_connections() {
    if [[ -n $IDLE_PID ]]; then kill "$IDLE_PID" 2>/dev/null || true; wait "$IDLE_PID" 2>/dev/null || true; fi
    IDLE_PID=""
}

# run_phase NAME CONNECTIONS BATCH RATE TAG: one measured phase; sets P_* variables.
run_phase() {
    local name=$1 connections=$2 batch=$3 rate=$4 tag=$5
    reset_log
    local before engage0 postgres0 machine0 after engage1 postgres1 machine1
    before=$(count_events)
    engage0=$(engage_ticks); postgres0=$(postgres_ticks); machine0=$(machine_ticks)
    echo "$name" >"$WORK/phase"
    log "phase $name: $connections connections, $batch event(s) per request, ${rate:-0} req/s pacing (0: none), ${DURATION} s"
    run_load "$name" "$connections" "$batch" "$rate" "$tag" "$DURATION"
    echo "between" >"$WORK/phase"
    engage1=$(engage_ticks); postgres1=$(postgres_ticks); machine1=$(machine_ticks)
    sleep 1 # requests still in flight when the load stopped commit (or fail) within this (engage awaits them)
    after=$(count_events)
    local file="$WORK/load-$name.txt"
    P_SECONDS=$(calc "$(result "$file" duration_us) / 1e6")
    P_STORED=$((after - before))
    P_EPS=$(calc "$P_STORED / $P_SECONDS")
    P_LOAD_EPS=$(calc "$(result "$file" accepted) / $P_SECONDS")
    P_RPS=$(calc "$(result "$file" requests) / $P_SECONDS")
    P_P50=$(calc "$(result "$file" p50_us) / 1000")
    P_P90=$(calc "$(result "$file" p90_us) / 1000")
    P_P99=$(calc "$(result "$file" p99_us) / 1000")
    P_ERRORS=$(( $(result "$file" non200) + $(result "$file" connect_errors) + $(result "$file" read_errors) \
        + $(result "$file" write_errors) + $(result "$file" timeouts) ))
    P_DUPLICATES=$(result "$file" duplicates)
    local elapsed_ticks
    elapsed_ticks=$(calc "$P_SECONDS * $CLK_TCK")
    P_ENGAGE_CPU=$(calc "($engage1 - $engage0) / $elapsed_ticks")
    P_POSTGRES_CPU=$(calc "($postgres1 - $postgres0) / $elapsed_ticks")
    P_LOAD_CPU=$(calc "($(children_seconds "$WORK/times-$name.1") - $(children_seconds "$WORK/times-$name.0")) / $P_SECONDS")
    read -r busy0 total0 steal0 <<<"$machine0"; read -r busy1 total1 steal1 <<<"$machine1"
    P_MACHINE_BUSY=$(calc "100 * ($busy1 - $busy0) / ($total1 - $total0)")
    P_MACHINE_STEAL=$(calc "100 * ($steal1 - $steal0) / ($total1 - $total0)")
    P_RSS_MB=$(awk -v p="$name" '$1 == p && $2 > m { m = $2 } END { printf "%.1f", m / 1024 }' "$WORK/rss.log")
    log "phase $name: stored $P_STORED events in $(fixed "$P_SECONDS" 1) s = $(grouped "$P_EPS") events/s" \
        "($LOAD_NAME saw $(grouped "$P_LOAD_EPS")/s), $(grouped "$P_RPS") req/s, p50/p90/p99 $(fixed "$P_P50" 1)/$(fixed "$P_P90" 1)/$(fixed "$P_P99" 1) ms," \
        "errors $P_ERRORS, engage CPU $(fixed "$P_ENGAGE_CPU" 2), postgres CPU $(fixed "$P_POSTGRES_CPU" 2), $LOAD_NAME CPU $(fixed "$P_LOAD_CPU" 2), machine busy $(fixed "$P_MACHINE_BUSY" 0)% (stolen $(fixed "$P_MACHINE_STEAL" 0)%)"
    (( P_DUPLICATES == 0 )) || log "phase $name: the server reported $P_DUPLICATES duplicates: event ids repeated"
    CPU_ROWS+="| $name | $(fixed "$P_ENGAGE_CPU" 2) | $(fixed "$P_POSTGRES_CPU" 2) | $(fixed "$P_LOAD_CPU" 2) | $(fixed "$P_MACHINE_BUSY" 0)% | $(fixed "$P_MACHINE_STEAL" 0)% | $P_RSS_MB MB |"$'\n'
}

# ---------------------------------------------------------------------------------------------
# 1. Build, fresh data directory, server, key

if [[ -z $ENGAGE_BIN ]]; then
    if [[ $BUILD == 1 ]]; then
        log "swift build -c release"
        (cd "$ROOT" && swift build -c release >&2)
    fi
    ENGAGE_BIN="$ROOT/.build/release/engage"
fi
[[ -x $ENGAGE_BIN ]] || die "no engage executable at $ENGAGE_BIN (run without BUILD=0, or set ENGAGE_BIN)"

make_work ingest
log "working in $WORK"

# The projector is off by default so that the ingest path is measured alone (it can run in another
# process: engage project); PROJECTOR=on measures both sharing the machine.
serve_args=(serve --listen "127.0.0.1:$PORT" --projector "${PROJECTOR:-off}")
[[ -z $HTTP_THREADS ]] || serve_args+=(--http-threads "$HTTP_THREADS")
[[ -z $COMMITTERS ]] || serve_args+=(--committers "$COMMITTERS")
[[ -z $POOL_SIZE ]] || serve_args+=(--pool-size "$POOL_SIZE")
[[ -z $PARALLEL_COMMIT_EVENTS ]] || serve_args+=(--parallel-commit-events "$PARALLEL_COMMIT_EVENTS")
# A CA and a server certificate (ECDSA P-256, for 127.0.0.1) of the run's own, in $WORK/tls.
make_certificate() {
    local dir="$WORK/tls"
    mkdir -p "$dir"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" \
        -days 2 -subj "/CN=ingest.sh CA" 2>>"$WORK/openssl.log"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/server.key" -out "$dir/server.csr" \
        -subj "/CN=127.0.0.1" 2>>"$WORK/openssl.log"
    printf 'subjectAltName = IP:127.0.0.1\nextendedKeyUsage = serverAuth\n' >"$dir/server.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
        -extfile "$dir/server.ext" -out "$dir/server.pem" 2>>"$WORK/openssl.log"
    chmod 644 "$dir"/*
    TLS_FLAGS=(--tls-cert "$dir/server.pem" --tls-key "$dir/server.key")
}

# start_server [EXTRA_FLAGS...]: engage serve with serve_args and the extra flags (and the TLS
# flags when SERVER_TLS=1); sets SERVER_PID, URL.
start_server() {
    SERVER_DATA_DIR=${DATA_DIR:-$WORK/pg}
    local tls_flags=()
    [[ ${SERVER_TLS:-0} == 0 ]] || tls_flags=("${TLS_FLAGS[@]}")
    log "starting engage ${serve_args[*]} --data-dir $SERVER_DATA_DIR $* ${tls_flags[*]}"
    : >"$WORK/serve.log" # emptied before the server starts, so no earlier server's address is read below
    "${SERVER_BIN:-$ENGAGE_BIN}" "${serve_args[@]}" --data-dir "$SERVER_DATA_DIR" "$@" "${tls_flags[@]}" >>"$WORK/serve.log" 2>&1 &
    SERVER_PID=$!
    local port=""
    for _ in $(seq 1200); do # initdb and the first start take a few seconds
        port=$(sed -n 's/.*msg=engage\.listening.*address=https\{0,1\}:\/\/[^ ]*:\([0-9][0-9]*\).*/\1/p' "$WORK/serve.log" | head -1)
        [[ -z $port ]] || break
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; SERVER_PID=""; die "engage serve exited during start-up"; }
        sleep 0.1
    done
    [[ -n $port ]] || { cat "$WORK/serve.log" >&2; die "engage serve did not report its address within 120 s"; }
    if [[ ${SERVER_TLS:-0} == 1 ]]; then
        URL="https://127.0.0.1:$port"
        curl -fsS --cacert "$WORK/tls/ca.pem" "$URL/healthz" >/dev/null || die "$URL/healthz failed"
    else
        URL="http://127.0.0.1:$port"
        curl -fsS "$URL/healthz" >/dev/null || die "$URL/healthz failed"
    fi
    log "engage (pid $SERVER_PID) listens on $URL"
}
touch "$WORK/rss.log"
TLS_FLAGS=()
[[ $TLS == 0 && $COMPARE_TLS == 0 ]] || make_certificate
SERVER_TLS=$TLS start_server

KEY=$("$ENGAGE_BIN" keys create --app "$APP" --role ingest --name ingest-benchmark --data-dir "$WORK/pg" 2>>"$WORK/keys.log")
[[ $KEY == egk_* ]] || die "engage keys create printed no key"
CONNINFO=$("$ENGAGE_BIN" db status --data-dir "$WORK/pg" | sed -n 's/^connect with: //p')
[[ -n $CONNINFO ]] || die "engage db status printed no connection string"
POSTGRES_VERSION=$(sql -c "SHOW server_version")

echo "idle" >"$WORK/phase"
(
    while kill -0 "$SERVER_PID" 2>/dev/null; do
        phase=$(cat "$WORK/phase" 2>/dev/null || echo unknown)
        awk -v phase="$phase" '/^VmRSS:/ { rss = $2 } /^VmHWM:/ { hwm = $2 } END { if (rss) print phase, rss, hwm }' \
            "/proc/$SERVER_PID/status" >>"$WORK/rss.log" 2>/dev/null || true
        sleep 0.25
    done
) &
SAMPLER_PID=$!

# ---------------------------------------------------------------------------------------------
# Compare mode: each phase, alternately on the server as configured and on the other one

if [[ $MODE == compare ]]; then
    read -r -a compare_flags <<<"$COMPARE_FLAGS"
    idle_flags=()
    (( COMPARE_IDLE == 0 )) || idle_flags=(--idle-timeout 120 --request-timeout 120)
    ROWS="" MEDIANS=""
    declare -A BASE_RATES=() OTHER_RATES=() RATIOS=()
    BASE_KEY=$KEY BASE_CONNINFO=$CONNINFO OTHER_DATA_DIR=$WORK/pg OTHER_KEY=$KEY OTHER_CONNINFO=$CONNINFO
    if [[ -n $COMPARE_BIN ]]; then
        # Another build may not know this database's migrations (nor this one its): its own.
        stop_server
        OTHER_DATA_DIR=$WORK/pg-other
        DATA_DIR=$OTHER_DATA_DIR SERVER_BIN=$COMPARE_BIN start_server
        OTHER_KEY=$("$COMPARE_BIN" keys create --app "$APP" --role ingest --name ingest-benchmark --data-dir "$OTHER_DATA_DIR" 2>>"$WORK/keys.log")
        OTHER_CONNINFO=$("$COMPARE_BIN" db status --data-dir "$OTHER_DATA_DIR" | sed -n 's/^connect with: //p')
        [[ $OTHER_KEY == egk_* && -n $OTHER_CONNINFO ]] || die "could not set up $COMPARE_BIN's database"
    fi
    for round in $(seq "$COMPARE_ROUNDS"); do
        for phase in "${COMPARE_PHASES[@]}"; do
            if [[ $phase == A ]]; then phase_connections=$CONNECTIONS phase_batch=$BATCH
            else phase_connections=$SINGLE_CONNECTIONS phase_batch=1; fi
            for side in base other; do
                stop_server
                [[ $SERVER_STATUS == 0 ]] || die "engage exited $SERVER_STATUS after SIGTERM"
                if [[ $side == base ]]; then KEY=$BASE_KEY CONNINFO=$BASE_CONNINFO; start_server "${idle_flags[@]}"
                else
                    KEY=$OTHER_KEY CONNINFO=$OTHER_CONNINFO
                    DATA_DIR=$OTHER_DATA_DIR SERVER_BIN=$COMPARE_BIN SERVER_TLS=$COMPARE_TLS start_server "${idle_flags[@]}" "${compare_flags[@]}"
                fi
                (( COMPARE_IDLE == 0 )) || hold_idle_connections "$COMPARE_IDLE"
                tag=$((10 + 2 * round)); [[ $phase == A ]] || tag=$((tag + 1))
                run_phase "$phase-$side-$round" "$phase_connections" "$phase_batch" 0 "$tag"
                release_idle_connections
                [[ $P_ERRORS == 0 ]] || die "phase $phase ($side, round $round): $P_ERRORS failed requests"
                if [[ $side == base ]]; then
                    base_eps=$P_EPS base_pg=$P_POSTGRES_CPU base_p50=$P_P50 base_engage=$P_ENGAGE_CPU base_load=$P_LOAD_CPU
                else
                    ratio=$(calc "$P_EPS / $base_eps")
                    BASE_RATES[$phase]+="$base_eps " OTHER_RATES[$phase]+="$P_EPS " RATIOS[$phase]+="$ratio "
                    ROWS+="| $phase | $round | $(grouped "$base_eps") | $(fixed "$base_p50" 1) | $(fixed "$base_engage" 2) | $(fixed "$base_pg" 2) | $(fixed "$base_load" 2)"
                    ROWS+=" | $(grouped "$P_EPS") | $(fixed "$P_P50" 1) | $(fixed "$P_ENGAGE_CPU" 2) | $(fixed "$P_POSTGRES_CPU" 2) | $(fixed "$P_LOAD_CPU" 2) | $(fixed "$ratio" 2) |"$'\n'
                fi
            done
        done
    done
    stop_server
    for phase in "${COMPARE_PHASES[@]}"; do
        MEDIANS+="Phase $phase medians: base $(grouped "$(echo "${BASE_RATES[$phase]}" | median)") events/s, other $(grouped "$(echo "${OTHER_RATES[$phase]}" | median)") events/s; median ratio other ÷ base $(fixed "$(echo "${RATIOS[$phase]}" | median)" 2)."$'\n'
    done
    other_description=""
    [[ -z $COMPARE_BIN ]] || other_description="run by \`$COMPARE_BIN\`"
    [[ -z $COMPARE_FLAGS ]] || other_description="${other_description:+$other_description }with \`$COMPARE_FLAGS\`"
    [[ $COMPARE_TLS == 0 ]] || other_description="${other_description:+$other_description }serving HTTPS (TLS 1.3, ECDSA P-256 certificate; the load verifies it and keeps its connections)"
    cat <<REPORT

### Compare ($(date -u +%Y-%m-%d), engage $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs)

\`MODE=compare COMPARE_PHASE='$COMPARE_PHASE' COMPARE_FLAGS='$COMPARE_FLAGS' COMPARE_BIN='$COMPARE_BIN' COMPARE_TLS=$COMPARE_TLS COMPARE_ROUNDS=$COMPARE_ROUNDS COMPARE_IDLE=$COMPARE_IDLE LOAD=$LOAD DURATION=$DURATION Benchmarks/ingest.sh\`: phase A is $CONNECTIONS connections with $BATCH events per request, phase C $SINGLE_CONNECTIONS connections with single-event requests; unpaced, ${DURATION} s from an empty log, $COMPARE_IDLE more connections open and silent; a freshly started server for each measurement, alternating the server as configured (base) and $other_description; load: $LOAD on the same machine. Event ids: $IDS.

| phase | round | base events/s | base p50 ms | base engage cores | base PostgreSQL cores | base load cores | other events/s | p50 ms | engage cores | PostgreSQL cores | load cores | ratio |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${ROWS}
${MEDIANS}
REPORT
    exit 0
fi

# ---------------------------------------------------------------------------------------------
# Soak mode: half of the measured maximum, for SOAK_MINUTES minutes

if [[ $MODE == soak ]]; then
    if (( WARMUP > 0 )); then
        echo "warmup" >"$WORK/phase"
        run_load warmup "$CONNECTIONS" "$BATCH" 0 4095 "$WARMUP"
    fi
    CPU_ROWS=""
    run_phase max "$CONNECTIONS" "$BATCH" 0 1
    MAX_EPS=$P_EPS
    reset_log
    SOAK_RATE=$(calc "$MAX_EPS / $BATCH / 2") # requests/s
    log "soak: $SOAK_MINUTES windows of 60 s at $(grouped "$(calc "$SOAK_RATE * $BATCH")") events/s asked"
    ROWS="" ACCEPTED_TOTAL=0 ERRORS_TOTAL=0 FIRST_RSS="" LAST_RSS="" P99S=""
    for window in $(seq "$SOAK_MINUTES"); do
        echo "soak-$window" >"$WORK/phase"
        run_load "soak-$window" "$CONNECTIONS" "$BATCH" "$SOAK_RATE" $((100 + window)) 60
        file="$WORK/load-soak-$window.txt"
        seconds=$(calc "$(result "$file" duration_us) / 1e6")
        accepted=$(result "$file" accepted)
        errors=$(( $(result "$file" non200) + $(result "$file" connect_errors) + $(result "$file" read_errors) \
            + $(result "$file" write_errors) + $(result "$file" timeouts) ))
        rss=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$SERVER_PID/status")
        p50=$(calc "$(result "$file" p50_us) / 1000"); p90=$(calc "$(result "$file" p90_us) / 1000")
        p99=$(calc "$(result "$file" p99_us) / 1000")
        ACCEPTED_TOTAL=$((ACCEPTED_TOTAL + accepted)); ERRORS_TOTAL=$((ERRORS_TOTAL + errors))
        [[ -n $FIRST_RSS ]] || FIRST_RSS=$rss
        LAST_RSS=$rss
        P99S+="$p99 "
        ROWS+="| $window | $(grouped "$(calc "$accepted / $seconds")") | $(fixed "$p50" 1) / $(fixed "$p90" 1) / $(fixed "$p99" 1) | $errors | $rss |"$'\n'
        log "soak window $window: $(grouped "$(calc "$accepted / $seconds")") events/s accepted, p50/p90/p99 $(fixed "$p50" 1)/$(fixed "$p90" 1)/$(fixed "$p99" 1) ms, errors $errors, VmRSS $rss MB"
    done
    sleep 1
    STORED=$(count_events)
    RSS_GROWTH=$(calc "100 * ($LAST_RSS - $FIRST_RSS) / $FIRST_RSS")
    P99_MEDIAN=$(echo "$P99S" | median)
    P99_MAX=$(echo "$P99S" | tr ' ' '\n' | grep . | sort -g | tail -1)
    stop_server
    le "$RSS_GROWTH" 10 && rss_ok=0 || rss_ok=1
    [[ $ERRORS_TOTAL == 0 ]] && errors_ok=0 || errors_ok=1
    # Every acknowledged event is stored; at most the requests in flight when each window's load
    # stopped (stored, their answers never read) come on top.
    IN_FLIGHT_MAX=$((SOAK_MINUTES * CONNECTIONS * BATCH))
    (( STORED >= ACCEPTED_TOTAL && STORED - ACCEPTED_TOTAL <= IN_FLIGHT_MAX )) && stored_ok=0 || stored_ok=1
    cat <<EOF

### Soak ($(date -u +%Y-%m-%d), engage $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs)

\`MODE=soak SOAK_MINUTES=$SOAK_MINUTES TLS=$TLS Benchmarks/ingest.sh\`$([[ $TLS == 0 ]] || echo " (over HTTPS)"): unpaced maximum measured first ($(grouped "$MAX_EPS") events/s over ${DURATION} s, $CONNECTIONS connections, $BATCH-event batches), then half of it for $SOAK_MINUTES minutes without emptying the log; load: $LOAD on the same machine.

| window (1 min) | events/s accepted | latency p50 / p90 / p99 ms | failed requests | engage VmRSS MB |
|---:|---:|---:|---:|---:|
${ROWS}
| check | result | target | |
|---|---:|---:|---|
| failed requests, all windows | $ERRORS_TOTAL | 0 | $(verdict $errors_ok) |
| events stored − acknowledged (requests cut off when each window's load stopped) | $(grouped "$STORED") − $(grouped "$ACCEPTED_TOTAL") = $(grouped $((STORED - ACCEPTED_TOTAL))) | 0 to $(grouped "$IN_FLIGHT_MAX") | $(verdict $stored_ok) |
| VmRSS growth, end of window 1 → end of window $SOAK_MINUTES | $(fixed "$RSS_GROWTH" 1)% ($FIRST_RSS → $LAST_RSS MB) | < 10% | $(verdict $rss_ok) |
| p99 per window: median / worst | $(fixed "$P99_MEDIAN" 1) / $(fixed "$P99_MAX" 1) ms | steady | |

Server stopped with SIGTERM: exit $SERVER_STATUS.
EOF
    exit 0
fi

# ---------------------------------------------------------------------------------------------
# 2. Baseline: psql \copy of the same rows into the same table, one connection

# measure_copy KIND: the median \copy rate of COPY_ROWS rows with KIND ids (time or random).
measure_copy() {
    local kind=$1 rates="" round start end stored rate
    log "baseline ($kind ids): writing $COPY_ROWS rows"
    sql -v rows="$COPY_ROWS" -v app="$APP" -v ids="$kind" -f "$BENCH/copy-rows.sql" >"$WORK/rows.tsv"
    cut -f1 "$WORK/rows.tsv" >"$WORK/ids.tsv"
    for round in $(seq "$COPY_ROUNDS"); do
        reset_log
        start=$(now_ns)
        if has_event_ids; then
            sql -c "BEGIN" -c "\\copy event_ids (event_id) FROM '$WORK/ids.tsv'" \
                -c "\\copy events ($COPY_COLUMNS) FROM '$WORK/rows.tsv'" -c "COMMIT" >/dev/null
        else
            sql -c "\\copy events ($COPY_COLUMNS) FROM '$WORK/rows.tsv'" >/dev/null
        fi
        end=$(now_ns)
        stored=$(count_events)
        [[ $stored == "$COPY_ROWS" ]] || die "\\copy stored $stored of $COPY_ROWS rows"
        rate=$(calc "$COPY_ROWS / (($end - $start) / 1e9)")
        rates+="$rate "
        log "baseline ($kind ids) round $round: $(grouped "$rate") rows/s"
    done
    COPY_BYTES=$(row_bytes)
    rm -f "$WORK/rows.tsv" "$WORK/ids.tsv"
    echo "$rates" | median >"$WORK/copy-$kind"
}
measure_copy "$IDS"
COPY_EPS=$(cat "$WORK/copy-$IDS")

# ---------------------------------------------------------------------------------------------
# 3-5. Phases

CPU_ROWS=""
if (( WARMUP > 0 )); then
    log "warm-up: ${WARMUP} s, not measured"
    echo "warmup" >"$WORK/phase"
    run_load warmup "$CONNECTIONS" "$BATCH" 0 4095 "$WARMUP"
fi

run_phase A "$CONNECTIONS" "$BATCH" 0 1
A_EPS=$P_EPS A_LOAD_EPS=$P_LOAD_EPS A_P50=$P_P50 A_P90=$P_P90 A_P99=$P_P99 A_ERRORS=$P_ERRORS A_RSS=$P_RSS_MB
A_BYTES=$(row_bytes)
A_RATIO=$(calc "$A_EPS / $COPY_EPS")
RANDOM_ROWS=""
if [[ $ALSO_RANDOM == 1 && $IDS == time ]]; then
    # Not every client makes time-ordered ids: the same phase with ids all over the index.
    measure_copy random
    COPY_RANDOM_EPS=$(cat "$WORK/copy-random")
    LOAD_IDS=random run_phase A-random "$CONNECTIONS" "$BATCH" 0 5
    A_RANDOM_RATIO=$(calc "$P_EPS / $COPY_RANDOM_EPS")
    [[ $P_ERRORS == 0 ]] || MISSED=1
    RANDOM_ROWS="| psql \\copy with random ids (median of $COPY_ROUNDS) | $(grouped "$COPY_RANDOM_EPS") rows/s | | |
| A with random ids | $(grouped "$P_EPS") events/s | | |
| A ÷ \\copy, random ids | $(fixed "$A_RANDOM_RATIO" 2)× | | |
| A latency p50 / p90 / p99, random ids | $(fixed "$P_P50" 1) / $(fixed "$P_P90" 1) / $(fixed "$P_P99" 1) ms | | |
"
fi

B_RATE=$(calc "$A_EPS / $BATCH / 2") # requests/s
run_phase B "$CONNECTIONS" "$BATCH" "$B_RATE" 2
B_EPS=$P_EPS B_RPS=$P_RPS B_P50=$P_P50 B_P90=$P_P90 B_P99=$P_P99 B_ERRORS=$P_ERRORS

run_phase C "$SINGLE_CONNECTIONS" 1 0 3
C_EPS=$P_EPS C_LOAD_EPS=$P_LOAD_EPS C_P50=$P_P50 C_P90=$P_P90 C_P99=$P_P99 C_ERRORS=$P_ERRORS
reset_log

# ---------------------------------------------------------------------------------------------
# 6. Memory, 7. SIGTERM

RSS_MAX_MB=$(awk '$2 > m { m = $2 } END { printf "%.1f", m / 1024 }' "$WORK/rss.log")
HWM_MB=$(awk '$3 > m { m = $3 } END { printf "%.1f", m / 1024 }' "$WORK/rss.log")
SAMPLES=$(wc -l <"$WORK/rss.log")

stop_server
wait "$SAMPLER_PID" 2>/dev/null || true
SAMPLER_PID=""
[[ $SERVER_STATUS == 0 ]] || { tail -20 "$WORK/serve.log" >&2; die "engage exited $SERVER_STATUS after SIGTERM"; }
"$ENGAGE_BIN" db status --data-dir "$WORK/pg" | grep -q '^stopped' || die "PostgreSQL still runs after engage stopped"
log "engage exited 0 after SIGTERM; PostgreSQL stopped"

# ---------------------------------------------------------------------------------------------
# Report

ge "$A_EPS" "$TARGET_A_EPS" && a_eps_ok=0 || a_eps_ok=1
ge "$A_RATIO" "$TARGET_A_RATIO" && a_ratio_ok=0 || a_ratio_ok=1
le "$B_P99" "$TARGET_B_P99_MS" && b_ok=0 || b_ok=1
ge "$C_EPS" "$TARGET_C_EPS" && c_ok=0 || c_ok=1
le "$RSS_MAX_MB" "$TARGET_RSS_MB" && rss_ok=0 || rss_ok=1
MISSED=$(( ${MISSED:-0} | a_eps_ok | a_ratio_ok | b_ok | c_ok | rss_ok ))
[[ $A_ERRORS == 0 && $B_ERRORS == 0 && $C_ERRORS == 0 ]] || MISSED=1

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
if [[ $LOAD == engage ]]; then load_description="load: \`engage bench ingest\`"; else load_description="load: wrk -t$THREADS with wrk/batch.lua"; fi
if [[ $TLS == 1 ]]; then transport="over HTTPS (TLS=1: TLS 1.3, ECDSA P-256 certificate)"; else transport="plain HTTP"; fi
settings="http-threads ${HTTP_THREADS:-default}, committers ${COMMITTERS:-default}, pool-size ${POOL_SIZE:-default}, parallel-commit-events ${PARALLEL_COMMIT_EVENTS:-default}"
cat <<EOF

### Ingestion ($(date -u +%Y-%m-%d), engage $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs: ${cpu_model:-unknown})

$load_description, $transport, ${DURATION} s per phase after a ${WARMUP} s warm-up, load generator on the same machine; PostgreSQL $POSTGRES_VERSION local, synchronous_commit on; engage serve: $settings. Event ids: $IDS. Each phase starts from an empty log; events/s are rows counted in \`events\` afterwards.

| measurement | result | target | |
|---|---:|---:|---|
| psql \\copy, 1 connection, $(grouped "$COPY_ROWS") rows (median of $COPY_ROUNDS) | $(grouped "$COPY_EPS") rows/s | | |
| A: $BATCH-event batches, $CONNECTIONS connections | $(grouped "$A_EPS") events/s | ≥ $(grouped "$TARGET_A_EPS") events/s | $(verdict $a_eps_ok) |
| A ÷ \\copy | $(fixed "$A_RATIO" 2)× | ≥ ${TARGET_A_RATIO}× | $(verdict $a_ratio_ok) |
| A latency p50 / p90 / p99 | $(fixed "$A_P50" 1) / $(fixed "$A_P90" 1) / $(fixed "$A_P99" 1) ms | | |
${RANDOM_ROWS}| B: half of A's rate ($(grouped "$(calc "$B_RATE * $BATCH")") events/s asked, $(grouped "$B_EPS") stored), p50 / p99 | $(fixed "$B_P50" 1) / $(fixed "$B_P99" 1) ms | p99 ≤ $TARGET_B_P99_MS ms | $(verdict $b_ok) |
| C: single-event requests, $SINGLE_CONNECTIONS connections | $(grouped "$C_EPS") events/s | ≥ $(grouped "$TARGET_C_EPS") events/s | $(verdict $c_ok) |
| C latency p50 / p90 / p99 | $(fixed "$C_P50" 1) / $(fixed "$C_P90" 1) / $(fixed "$C_P99" 1) ms | | |
| engage resident memory, max VmRSS ($SAMPLES samples; VmHWM $HWM_MB MB) | $RSS_MAX_MB MB | ≤ $TARGET_RSS_MB MB | $(verdict $rss_ok) |

Failed requests (non-200, socket errors, timeouts): A $A_ERRORS, B $B_ERRORS, C $C_ERRORS. $LOAD_NAME's own count of accepted events: A $(grouped "$A_LOAD_EPS")/s, C $(grouped "$C_LOAD_EPS")/s. Row size: \\copy $COPY_BYTES bytes, served $A_BYTES bytes. Server stopped with SIGTERM: exit $SERVER_STATUS.

CPU while each phase ran, in cores (the machine has $(nproc); "machine busy" counts every process, this benchmark's and others'):

| phase | engage | PostgreSQL | $LOAD_NAME | machine busy | of which stolen | engage max VmRSS |
|---|---:|---:|---:|---:|---:|---:|
${CPU_ROWS}
EOF

if [[ $STRICT == 1 && $MISSED == 1 ]]; then exit 2; fi
exit 0
