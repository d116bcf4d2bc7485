#!/usr/bin/env bash
# Sustained projector lag (issue 19, point 2): HTTP ingest at half of phase A's maximum for
# MINUTES minutes with the projector in the same process, and per minute the lag's p50, p99 and
# maximum as /metrics shows it (engage_projector_lag_seconds, sampled every SAMPLE_SECONDS).
# Goal: p99 at most 2 s in every minute and no growth from the first minute to the last.
#
#   Benchmarks/lag.sh                                  build release, 10 minutes (about 11 minutes)
#   BUILD=0 MINUTES=1 MAX_SECONDS=5 Benchmarks/lag.sh  a short check
#
# On a fresh local PostgreSQL in a new directory under WORK_PARENT:
#   1. `engage serve --projector off`, MAX_SECONDS of unpaced 100-event batches over 16
#      connections (phase A of Benchmarks/ingest.sh) after a 3 s warm-up: the maximum, counted in
#      the log. Then the log is emptied and the server stopped.
#   2. `engage serve --projector on` on the same data, ingest paced at half that maximum for
#      MINUTES minutes, /metrics scraped every SAMPLE_SECONDS.
# Each minute's line counts only its samples; "growth" compares the last minute's p50 with the
# first's.
#
# Settings (environment):
#   BUILD=1            run `swift build -c release` first (ignored when ENGAGE_BIN is set)
#   ENGAGE_BIN         engage executable (default: the package's release build)
#   MINUTES=10         minutes of paced load, 1-120
#   MAX_SECONDS=20     seconds of the unpaced measurement, 1-60
#   MAX_RATE=          events/s to halve instead of measuring it (skips step 1)
#   SAMPLE_SECONDS=0.5 seconds between scrapes of /metrics
#   CONNECTIONS=16 BATCH=100 IDS=time    the load, as in ingest.sh
#   PACED_CONNECTIONS=64                 connections of the paced load (step 2)
#   PROJECTOR=on       off runs step 2 without the projector: what ingestion alone costs the
#                      machine at that rate (the lag then only grows; its table means nothing)
#   ENGAGE_PROJECTOR_READ_INTERVAL       passed to engage serve (ms; 0 reads again as soon as a
#                      batch commits); named in the report's command line when set
#
# The paced load gives each free connection the next slot of the schedule and never sends in the
# past, so it can carry at most PACED_CONNECTIONS / (request latency) requests/s: 16 connections
# at half of phase A's rate leave 43 ms per request, less than a 100-event batch takes while the
# projector shares the cores, and the clients then fall behind the rate asked (as on 2026-12-02,
# 0.81 of it). Many devices send at once in a real burst, so the paced step opens more.
#   WORK_PARENT=/var/tmp KEEP_WORK=0
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-1}
ENGAGE_BIN=${ENGAGE_BIN:-}
MINUTES=${MINUTES:-10}
MAX_SECONDS=${MAX_SECONDS:-20}
MAX_RATE=${MAX_RATE:-}
SAMPLE_SECONDS=${SAMPLE_SECONDS:-0.5}
CONNECTIONS=${CONNECTIONS:-16}
PACED_CONNECTIONS=${PACED_CONNECTIONS:-64}
BATCH=${BATCH:-100}
IDS=${IDS:-time}
WORK_PARENT=${WORK_PARENT:-/var/tmp}
KEEP_WORK=${KEEP_WORK:-0}
PROJECTOR=${PROJECTOR:-on}
APP=lag-bench

SCRIPT=lag.sh
# shellcheck source=Benchmarks/common.sh
source "$ROOT/Benchmarks/common.sh"
require_int MINUTES "$MINUTES" 1 120
require_int MAX_SECONDS "$MAX_SECONDS" 1 60
[[ -z $MAX_RATE ]] || require_int MAX_RATE "$MAX_RATE" 100 100000000
require_int CONNECTIONS "$CONNECTIONS" 1 10000
require_int PACED_CONNECTIONS "$PACED_CONNECTIONS" 1 10000
require_int BATCH "$BATCH" 1 1000
[[ $PROJECTOR == on || $PROJECTOR == off ]] || die "PROJECTOR must be on or off, not '$PROJECTOR'"
[[ $SAMPLE_SECONDS =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_error "SAMPLE_SECONDS=$SAMPLE_SECONDS: expected seconds such as 0.5"
[[ $IDS == time || $IDS == random ]] || usage_error "IDS=$IDS: expected time or random"
for program in curl awk psql; do command -v "$program" >/dev/null || die "$program not found"; done

resolve_engage_bin

make_work lag
SERVER_PID="" LOAD_PID=""
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [[ -n $LOAD_PID ]]; then kill "$LOAD_PID" 2>/dev/null || true; wait "$LOAD_PID" 2>/dev/null || true; fi
    if [[ -n $SERVER_PID ]]; then stop_server || true; fi
    finish_work "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# milliseconds FIELD: a latency of the paced load's result line, in ms.
milliseconds() { awk -v us="$(result "$WORK/load-sustained.txt" "$1")" 'BEGIN { printf "%.1f", us / 1000 }'; }
result() { sed -n 's/^[a-z]*\.result .*\<'"$2"'=\([^ ]*\).*/\1/p' "$1" | tail -1; }

# process_ticks: CPU clock ticks (user + system) of engage, of its PostgreSQL (the postmaster with
# the children it reaped, and every child alive: a backend or autovacuum worker that exits in
# between moves from the second sum to the first).
process_ticks() {
    ticks() { awk '{ sub(/^.*\) /, ""); t = $12 + $13; if (with_children) t += $14 + $15; print t }' with_children="${2:-0}" "/proc/$1/stat" 2>/dev/null || echo 0; }
    local postgres=$(( $(ticks "$POSTMASTER_PID" 1) )) child
    for child in $(pgrep -P "$POSTMASTER_PID"); do postgres=$(( postgres + $(ticks "$child") )); done
    echo "$(ticks "$SERVER_PID") $postgres"
}

# start_server on|off: engage serve with the projector on or off; sets SERVER_PID and URL.
start_server() {
    log "starting engage serve --projector $1"
    "$ENGAGE_BIN" serve --listen 127.0.0.1:0 --data-dir "$WORK/pg" --projector "$1" >"$WORK/serve-$1.log" 2>&1 &
    SERVER_PID=$!
    local port=""
    for _ in $(seq 1200); do
        port=$(sed -n 's/.*msg=engage\.listening.*address=http:\/\/[^ ]*:\([0-9][0-9]*\).*/\1/p' "$WORK/serve-$1.log" | head -1)
        [[ -z $port ]] || break
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/serve-$1.log" >&2; SERVER_PID=""; die "engage serve exited during start-up"; }
        sleep 0.1
    done
    [[ -n $port ]] || die "engage serve did not report its address within 120 s"
    URL="http://127.0.0.1:$port"
    curl -fsS "$URL/healthz" >/dev/null || die "$URL/healthz failed"
}
stop_server() {
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    local status=0
    wait "$SERVER_PID" || status=$?
    SERVER_PID=""
    return "$status"
}
# load SECONDS RATE NAME TAG [CONNECTIONS]: BATCH-event batches (RATE requests/s, 0 unpaced) in the background.
load() {
    ENGAGE_BENCH_KEY=$KEY "$ENGAGE_BIN" bench ingest --url "$URL" --connections "${5:-$CONNECTIONS}" --batch "$BATCH" \
        --rate "$2" --tag "$4" --ids "$IDS" --seconds "$1" --timeout 10 >"$WORK/load-$3.txt" 2>&1 &
    LOAD_PID=$!
}
finish_load() {
    local status=0
    wait "$LOAD_PID" || status=$?
    LOAD_PID=""
    [[ $status == 0 ]] || { cat "$WORK/load-$1.txt" >&2; die "the load failed ($1, exit $status)"; }
}

# 1. Phase A's maximum, projector off.
start_server off
KEY=$("$ENGAGE_BIN" keys create --app "$APP" --role ingest --name lag-benchmark --data-dir "$WORK/pg" 2>>"$WORK/keys.log")
[[ $KEY == egk_* ]] || die "engage keys create printed no key"
CONNINFO=$("$ENGAGE_BIN" db status --data-dir "$WORK/pg" | sed -n 's/^connect with: //p')
[[ -n $CONNINFO ]] || die "engage db status printed no connection string"
sql() { psql "$CONNINFO" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
if [[ -z $MAX_RATE ]]; then
    load 3 0 warmup 4095; finish_load warmup
    sql -c "TRUNCATE events" >/dev/null
    log "phase A: ${MAX_SECONDS} s unpaced"
    load "$MAX_SECONDS" 0 max 1; finish_load max
    sleep 1 # requests in flight when the load stopped commit within this
    stored=$(sql -c "SELECT count(*) FROM events")
    MAX_RATE=$(calc "$stored / ($(result "$WORK/load-max.txt" duration_us) / 1e6)")
    log "phase A: $(grouped "$MAX_RATE") events/s"
fi
sql -c "TRUNCATE events, notification_states, engagement_daily, engagement_actions_daily, extension_telemetry_daily" \
    -c "DELETE FROM projection_checkpoints" -c "VACUUM ANALYZE events" -c "CHECKPOINT" >/dev/null
stop_server || die "engage (projector off) did not exit 0 after SIGTERM"

# 2. Half of it for MINUTES minutes, projector on, lag sampled.
start_server "$PROJECTOR"
RATE=$(calc "$MAX_RATE / $BATCH / 2")
log "sustained: $(grouped "$(calc "$MAX_RATE / 2")") events/s for $MINUTES min, lag sampled every ${SAMPLE_SECONDS} s"
# The whole machine's CPU over the paced step (/proc/stat: user, nice, system, irq and softirq
# busy; steal is time the hypervisor gave to others), to show how close to saturation it ran.
cpu_before=$(head -1 /proc/stat)
POSTMASTER_PID=$(head -1 "$WORK/pg/postmaster.pid")
load $((MINUTES * 60)) "$RATE" sustained 2 "$PACED_CONNECTIONS"
# And who spent it: engage and its PostgreSQL (clock ticks, read at both ends; the rest of the
# machine's figure is the load generator, the lag's scrapes and the kernel).
ticks_before=$(process_ticks)
start_ns=$(date +%s%N)
: >"$WORK/lag.txt"
while kill -0 "$LOAD_PID" 2>/dev/null; do
    curl -fsS "$URL/metrics" 2>/dev/null | awk -v t="$(( ($(date +%s%N) - start_ns) / 1000000 ))" '
        $1 == "engage_projector_lag_seconds" { s = $2 } $1 == "engage_projector_lag_events" { e = $2 }
        END { print t / 1000, (s == "" ? "nan" : s), (e == "" ? "nan" : e) }' >>"$WORK/lag.txt" || true
    sleep "$SAMPLE_SECONDS"
done
ticks_after=$(process_ticks)
ticks_ns=$(( $(date +%s%N) - start_ns ))
finish_load sustained
cpu_split=$(printf '%s\n%s\n' "$ticks_before" "$ticks_after" | awk -v hz="$(getconf CLK_TCK)" -v ns="$ticks_ns" '
    { e[NR] = $1; p[NR] = $2 }
    END { s = ns / 1e9 * hz; printf "engage %.2f cores, its PostgreSQL %.2f", (e[2] - e[1]) / s, (p[2] - p[1]) / s }')
cpu_used=$(printf '%s\n%s\n' "$cpu_before" "$(head -1 /proc/stat)" | awk -v cores="$(nproc)" '
    { busy[NR] = $2 + $3 + $4 + $7 + $8; all[NR] = busy[NR] + $5 + $6 + $9; steal[NR] = $9 }
    END { d = all[2] - all[1]; printf "%.2f of %d cores busy, %.2f stolen", cores * (busy[2] - busy[1]) / d, cores, cores * (steal[2] - steal[1]) / d }')
sleep 1
stored=$(sql -c "SELECT count(*) FROM events")
accepted_rate=$(calc "$(result "$WORK/load-sustained.txt" accepted) / ($(result "$WORK/load-sustained.txt" duration_us) / 1e6)")
failed=$(( $(result "$WORK/load-sustained.txt" non200) + $(result "$WORK/load-sustained.txt" timeouts) ))
stop_server || die "engage (projector on) did not exit 0 after SIGTERM"

# Per minute: p50, p99, max of the lag in seconds (nearest rank), and the largest backlog in events
# (engage_projector_lag_events counts up to 100,000: a reading costs the same however far behind).
# A scrape whose lag reads NaN (the database gave no reading within the metric's limit, itself a
# sign of an overloaded machine) or that got no answer is counted apart, not sorted among the
# readings; a minute with no reading at all has no p50 to compare ("n/a"), not 0.
ROWS=$(awk -v minutes="$MINUTES" '
    { m = int($1 / 60); if (m >= minutes) m = minutes - 1
      if (tolower($2) ~ /nan/) { u[m]++; next }
      n[m]++; v[m, n[m]] = $2; if (tolower($3) !~ /nan/ && $3 > e[m]) e[m] = $3 }
    END {
        for (m = 0; m < minutes; m++) {
            if (!n[m]) { printf "| %d | 0 | %d | | | | |\n", m + 1, u[m]; continue }
            for (i = 1; i <= n[m]; i++) a[i] = v[m, i]
            for (i = 2; i <= n[m]; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
            p50 = a[int(0.5 * (n[m] - 1)) + 1]; p99 = a[int(0.99 * (n[m] - 1) + 0.999999) + 1]; mx = a[n[m]]
            printf "| %d | %d | %d | %.2f | %.2f | %.2f | %d |\n", m + 1, n[m], u[m], p50, p99, mx, e[m]
        }
    }' "$WORK/lag.txt")
p50_of() { awk -F'|' '{ v = $5; gsub(/ /, "", v); print (v == "" ? "n/a" : v) }'; }
first_p50=$(echo "$ROWS" | head -1 | p50_of)
last_p50=$(echo "$ROWS" | tail -1 | p50_of)
worst_p99=$(echo "$ROWS" | awk -F'|' '$6 + 0 > w { w = $6 + 0 } END { printf "%.2f", w }')
unread_minutes=$(echo "$ROWS" | awk -F'|' '$4 + 0 > 0 { k++ } END { print k + 0 }')

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cat <<EOF

### Sustained projector lag ($(date -u +%Y-%m-%d), engage $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs: ${cpu_model:-unknown})

\`${ENGAGE_PROJECTOR_READ_INTERVAL:+ENGAGE_PROJECTOR_READ_INTERVAL=$ENGAGE_PROJECTOR_READ_INTERVAL }MINUTES=$MINUTES MAX_SECONDS=$MAX_SECONDS SAMPLE_SECONDS=$SAMPLE_SECONDS PACED_CONNECTIONS=$PACED_CONNECTIONS Benchmarks/lag.sh\`: phase A's maximum $(grouped "$MAX_RATE") events/s ($BATCH-event batches, $CONNECTIONS connections, projector off); then $(grouped "$(calc "$MAX_RATE / 2")") events/s asked for $MINUTES min over $PACED_CONNECTIONS connections with the projector $([[ $PROJECTOR == on ]] && echo "in the same process" || echo "OFF (ingestion's own cost)") ($(grouped "$accepted_rate") events/s accepted, machine CPU $cpu_used ($cpu_split), $failed failed requests, request latency p50 $(milliseconds p50_us) ms and p99 $(milliseconds p99_us) ms, $stored events stored). Lag is \`engage_projector_lag_seconds\` from /metrics every ${SAMPLE_SECONDS} s.

| minute | samples | no reading | lag p50 s | lag p99 s | lag max s | max backlog events (counted up to 100,000) |
|---:|---:|---:|---:|---:|---:|---:|
$ROWS

Worst minute's p99 $worst_p99 s (goal ≤ 2 s); p50 first minute $first_p50 s, last minute $last_p50 s (goal: no growth); minutes with scrapes that got no reading: $unread_minutes (their lag is unknown, not small).
EOF
