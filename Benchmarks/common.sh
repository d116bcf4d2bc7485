# Sourced by the benchmark scripts (ingest.sh, failover.sh, recovery.sh, projector.sh, lag.sh): logging and
# argument checks, the engage executable, processes, waiting, and the retrying ingest clients of
# failover.sh and recovery.sh. Before sourcing, set SCRIPT (the name in log lines) and, optionally,
# USAGE (the usage line of a refusal; by default a pointer to the script's header).

log() { printf '%s %s: %s\n' "$(date +%H:%M:%S)" "$SCRIPT" "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage_error() { printf '%s: %s\nusage: %s\n' "$SCRIPT" "$1" "${USAGE:-see the settings in the header of Benchmarks/$SCRIPT}" >&2; exit 64; }
require_int() { [[ $2 =~ ^[0-9]+$ ]] && (( $2 >= $3 && $2 <= $4 )) || usage_error "$1=$2: expected an integer in $3...$4"; }
now() { date +%s.%N; }

# Integer with thousands separators; arithmetic to 6 decimals; a value to $2 decimals.
grouped() { printf '%.0f' "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }
calc() { awk "BEGIN { printf \"%.6f\", $* }"; }
fixed() { awk -v v="$1" -v d="$2" 'BEGIN { printf "%.*f", d, v }'; }

# The settings of the retrying clients and the build (the scripts' headers describe them).
CLIENTS=${CLIENTS:-4}
RETRY_MS=${RETRY_MS:-100}
BUILD=${BUILD:-1}
ENGAGE_BIN=${ENGAGE_BIN:-}
WORK_PARENT=${WORK_PARENT:-/var/tmp}
KEEP_WORK=${KEEP_WORK:-0}
require_int CLIENTS "$CLIENTS" 1 32
require_int RETRY_MS "$RETRY_MS" 10 5000

# ENGAGE_BIN, or the package's release build (built first when BUILD=1).
resolve_engage() { # root
    if [[ -z $ENGAGE_BIN ]]; then
        if [[ $BUILD == 1 ]]; then log "building release"; (cd "$1" && swift build -c release >&2); fi
        ENGAGE_BIN="$1/.build/release/engage"
    fi
    [[ -x $ENGAGE_BIN ]] || die "$ENGAGE_BIN is not an executable"
}
resolve_engage_bin() { resolve_engage "$ROOT"; }

# Sets WORK to a new directory under WORK_PARENT named after $1.
make_work() {
    WORK=$(mktemp -d "$WORK_PARENT/engage-$1.XXXXXX")
    chmod 755 "$WORK" # the postgres user (when run as root) must reach the data directory inside
}

# The end of a cleanup() whose work has engage's local PostgreSQL in $WORK/pg: stops it if it runs,
# keeps WORK (KEEP_WORK=1, or a failure other than Ctrl-C or SIGTERM) or removes it, exits with $1.
finish_work() { # status
    if [[ -f $WORK/pg/postmaster.pid ]]; then
        "$ENGAGE_BIN" db stop --data-dir "$WORK/pg" >/dev/null 2>&1 || log "could not stop PostgreSQL in $WORK/pg"
    fi
    if [[ $KEEP_WORK == 1 || ($1 -ne 0 && $1 -ne 130 && $1 -ne 143) ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
    exit "$1"
}

# For a script that defines cleanup(): it runs at every exit, Ctrl-C and SIGTERM included, and a
# failing command is logged with its line.
trap_cleanup() {
    trap 'log "failed (exit $?) at line $LINENO: $BASH_COMMAND"' ERR
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# For a script whose work is engage's local PostgreSQL in $WORK/pg and nothing more to clean up:
# makes WORK named after $1 and the cleanup (finish_work) at every exit, and defines `engage`
# (a command on that PostgreSQL) and `sql` (its psql, unaligned and quiet; psql's options follow).
local_postgres_work() { # name
    make_work "$1"
    cleanup() {
        local status=$?
        trap - EXIT INT TERM
        finish_work "$status"
    }
    trap_cleanup
    engage() { "$ENGAGE_BIN" "$@" --data-dir "$WORK/pg"; }
    sql() { "$ENGAGE_BIN" db psql --data-dir "$WORK/pg" -- -XAtq "$@"; }
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $((20000 + RANDOM % 20000)); }

# Every pid descending from $1, itself included.
process_tree() {
    local pids=("$1") index=0 table
    table=$(ps -e -o pid=,ppid=)
    while (( index < ${#pids[@]} )); do
        pids+=($(awk -v parent="${pids[$index]}" '$2 == parent { print $1 }' <<<"$table"))
        index=$((index + 1))
    done
    echo "${pids[@]}"
}

wait_until() { # seconds description command...
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@"; do
        (( SECONDS < deadline )) || die "no $what within ${deadline}s"
        sleep 0.1
    done
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; } # numbers on stdin, by lines or spaces

# An ingest client (WORK, KEY, HTTP_PORT, RETRY_MS set): one new event per request, resent every
# RETRY_MS until acknowledged, until $WORK/load/stop exists. Each attempt is logged in
# $WORK/load/client-N.log as: start end status event_id.
client() { # number
    local out="$WORK/load/client-$1.log" id body start status pause
    pause=$(awk -v ms="$RETRY_MS" 'BEGIN { print ms / 1000 }')
    while [[ ! -e $WORK/load/stop ]]; do
        id=$(cat /proc/sys/kernel/random/uuid)
        body="[{\"event_id\":\"$id\",\"type\":\"displayed\",\"notification_id\":\"n-$id\",\"device_id\":\"d$1\",\"category\":\"bench\",\"occurred_at\":\"$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)\",\"presentation\":\"rich\",\"attachment_kind\":\"image\"}]"
        while :; do
            start=$(now)
            # Longer than engage's commit timeout (10 s), after which it answers 503.
            status=$(curl -s -o /dev/null -w '%{http_code}' --max-time 15 -H "Authorization: Bearer $KEY" \
                -H 'Content-Type: application/json' --data "$body" "http://127.0.0.1:$HTTP_PORT/v1/events" || true)
            echo "$start $(now) $status $id" >>"$out"
            [[ $status == 200 ]] && break
            [[ -e $WORK/load/stop ]] && break 2
            sleep "$pause"
        done
    done
}

acknowledged_since() { awk -v t="$1" '$3 == 200 && $1 > t' "$WORK"/load/client-*.log 2>/dev/null | wc -l; }
acknowledged_at_least() { (( $(acknowledged_since "$1") >= $2 )); } # since count
# The end of the first request started after $1 that was acknowledged.
first_ack_after() { awk -v t="$1" '$3 == 200 && $1 > t { print $2 }' "$WORK"/load/client-*.log | sort -n | head -1; }
