#!/usr/bin/env bash
# Recovery benchmark (issue 18, docs/reliability.md "RPO and RTO per failure"): what a failure
# costs engage in acknowledged events lost (RPO) and in time until events are acknowledged (or
# reports answered) again (RTO), on PostgreSQL clusters built on this machine; prints a markdown
# table.
#
#   Benchmarks/recovery.sh                                   build release, every scenario
#   BUILD=0 ROUNDS=3 SCENARIOS="engage-killed replica-lost" Benchmarks/recovery.sh
#
# Scenarios, each ROUNDS times, under CLIENTS curl loops that send one new event per request and
# resend it every RETRY_MS until a 200 acknowledges it (as failover.sh does):
#   engage-killed        `engage serve` killed with SIGKILL and started again at once (as a
#                        supervisor with no restart delay would)
#   postgres-restart     `pg_ctl restart -m fast` (a planned restart)
#   postgres-crash       the postmaster and its processes killed with SIGKILL, then started
#                        (crash recovery)
#   replica-lost         `engage serve --read-database` on a streaming standby, a reader asking
#                        GET /v1/report every RETRY_MS; the standby stopped (immediate): stop ->
#                        first report answered (from the primary), and reports not answered
#   async-primary-lost   the primary of an asynchronous standby lost (every process SIGKILL), the
#                        standby promoted at once by `pg_ctl promote` (an operator's or a tool's
#                        decision, taken here without delay); engage on both hosts
#                        (target_session_attrs=read-write); the RPO is the acknowledged events
#                        missing from the promoted standby
# For the writes, the RTO is the longest time without any acknowledgement around the failure;
# the RPO, acknowledged events missing from the log afterwards.
# Each cluster runs on a Unix socket in the run's directory, as the postgres user when run as
# root, with fsync on. The primary lost with a synchronous standby, and the synchronous standby
# lost, need pg_auto_failover: Benchmarks/failover.sh (VICTIM=primary|secondary).
#
# Settings (environment):
#   ROUNDS=3             rounds per scenario, 1-20
#   SCENARIOS            a subset of the scenarios above (default: all)
#   CLIENTS=4            load loops, 1-32
#   RETRY_MS=100         pause between a client's attempts after a refusal or no answer
#   BUILD=1              run `swift build -c release` first (ignored when ENGAGE_BIN is set)
#   ENGAGE_BIN           engage executable (default: the package's release build)
#   WORK_PARENT=/var/tmp where the run's directory is made; KEEP_WORK=0 (1 keeps it)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=${ROUNDS:-3}
SCENARIOS=${SCENARIOS:-engage-killed postgres-restart postgres-crash replica-lost async-primary-lost}
APP=recovery-bench

SCRIPT=recovery.sh
USAGE='[ROUNDS=n] [SCENARIOS="..."] [BUILD=0] Benchmarks/recovery.sh (settings in the header)'
source "$ROOT/Benchmarks/common.sh"
require_int ROUNDS "$ROUNDS" 1 20
for scenario in $SCENARIOS; do
    case $scenario in engage-killed|postgres-restart|postgres-crash|replica-lost|async-primary-lost) ;;
        *) usage_error "SCENARIOS: unknown scenario $scenario" ;; esac
done
command -v curl >/dev/null || die "curl is missing"
command -v psql >/dev/null || die "psql is missing"
PG_BIN=/usr/lib/postgresql/$(ls /usr/lib/postgresql 2>/dev/null | sort -rn | head -1)/bin
[[ -x $PG_BIN/initdb ]] || die "no PostgreSQL server under /usr/lib/postgresql"

resolve_engage "$ROOT"

WORK=$(mktemp -d "$WORK_PARENT/engage-recovery-XXXXXX")
chmod 755 "$WORK"
AS_POSTGRES=()
if [[ $(id -u) == 0 ]]; then chown postgres: "$WORK"; AS_POSTGRES=(runuser -u postgres --); fi
mkdir -p "$WORK/load"
pg() { "${AS_POSTGRES[@]}" "$PG_BIN/$1" "${@:2}"; }

SERVER_PID=
LOAD_PIDS=()
CLUSTERS=()
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    stop_load
    stop_server
    for cluster in "${CLUSTERS[@]}"; do kill_cluster "$cluster"; done
    if [[ $KEEP_WORK == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
    exit $status
}
trap_cleanup

HTTP_PORT=$(free_port)
seconds_between() { awk -v a="$2" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }

# ---- Clusters: DIR is $WORK/<name>, socket in it, port 5432 ----------------------------------
url() { echo "host=$WORK/$1 port=5432 user=engage dbname=engage"; }
sql() { psql -qAtX "$(url "$1")" -c "$2"; }
new_primary() { # name
    pg initdb -D "$WORK/$1" --username=engage --auth=trust --encoding=UTF8 --locale=C >/dev/null
    printf "listen_addresses = ''\nunix_socket_directories = '%s'\nmax_wal_size = '2GB'\n" "$WORK/$1" >>"$WORK/$1/postgresql.conf"
    start_cluster "$1"
    psql -qAtX "host=$WORK/$1 port=5432 user=engage dbname=postgres" -c "CREATE DATABASE engage" >/dev/null
}
new_standby() { # name of_primary
    mkdir -m 700 "$WORK/$1"; [[ $(id -u) == 0 ]] && chown postgres: "$WORK/$1"
    pg pg_basebackup -d "host=$WORK/$2 port=5432 user=engage application_name=$1" -D "$WORK/$1" -R -c fast -X stream 2>>"$WORK/$1-basebackup.log"
    rm -f "$WORK/$1/.s.PGSQL.5432.lock"
    sed -i "s|^unix_socket_directories = .*|unix_socket_directories = '$WORK/$1'|" "$WORK/$1/postgresql.conf"
    start_cluster "$1"
}
start_cluster() { pg pg_ctl start -D "$WORK/$1" -l "$WORK/$1.log" -w -t 120 >/dev/null 2>&1; [[ " ${CLUSTERS[*]} " == *" $1 "* ]] || CLUSTERS+=("$1"); }
postmaster() { head -1 "$WORK/$1/postmaster.pid" 2>/dev/null; }
kill_cluster() { # every process of it at once, as when its machine dies
    local pid tree
    pid=$(postmaster "$1") || return 0
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
    tree=$(process_tree "$pid")
    kill -STOP $tree 2>/dev/null || true
    kill -KILL $tree 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}

# ---- engage and its load ----------------------------------------------------------------------
start_server() { # database-url [extra options...]
    "$ENGAGE_BIN" serve --database "$1" --listen "127.0.0.1:$HTTP_PORT" --projector off --scheduler off "${@:2}" >>"$WORK/engage.log" 2>&1 &
    SERVER_PID=$!
}
stop_server() { [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; SERVER_PID=; return 0; }
ready() { curl -sf -o /dev/null "http://127.0.0.1:$HTTP_PORT/readyz"; }

PAUSE=$(awk -v ms="$RETRY_MS" 'BEGIN { print ms / 1000 }')
reader() { # logs "start end status database" per GET /v1/report
    local out="$WORK/load/reader.log" start response
    while [[ ! -e $WORK/load/stop ]]; do
        start=$(now)
        response=$(curl -s -w '\n%{http_code}' --max-time 15 -H "Authorization: Bearer $READ_KEY" "http://127.0.0.1:$HTTP_PORT/v1/report" || true)
        echo "$start $(now) $(tail -1 <<<"$response") $(grep -o '"read_from":{"database":"[a-z]*"' <<<"$response" | cut -d'"' -f6)" >>"$out"
        sleep "$PAUSE"
    done
}
start_load() { # with_reader
    rm -f "$WORK/load/stop" "$WORK"/load/*.log
    for c in $(seq 1 "$CLIENTS"); do client "$c" & LOAD_PIDS+=($!); done
    [[ $1 == 1 ]] && { reader & LOAD_PIDS+=($!); }
    return 0
}
stop_load() {
    touch "$WORK/load/stop"
    for pid in "${LOAD_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    LOAD_PIDS=()
}
# The longest time without any acknowledgement, from shortly before $1 until the load stopped:
# how long writes were out (with CLIENTS clients, acknowledgements are otherwise milliseconds apart).
longest_gap_after() {
    awk -v t="$1" '$3 == 200 && $2 > t - 2 { print $2 }' "$WORK"/load/client-*.log | sort -n \
        | awk 'NR > 1 && $1 - previous > gap { gap = $1 - previous } { previous = $1 } END { printf "%.2f", gap }'
}
# Acknowledged events of this round missing from `cluster`'s log, and rows stored twice.
lost_on() {
    awk '$3 == 200 { print $4 }' "$WORK"/load/client-*.log | sort -u >"$WORK/acknowledged"
    sql "$1" "SELECT event_id FROM events WHERE app_id = '$APP'" | sort >"$WORK/stored"
    echo "$(comm -23 "$WORK/acknowledged" <(sort -u "$WORK/stored") | wc -l) $(( $(wc -l <"$WORK/stored") - $(sort -u "$WORK/stored" | wc -l) ))"
}

setup_database() { # cluster: engage's schema, keys
    "$ENGAGE_BIN" migrate --database "$(url "$1")" >>"$WORK/engage.log" 2>&1
    KEY=$("$ENGAGE_BIN" keys create --database "$(url "$1")" --app "$APP" 2>>"$WORK/engage.log")
    READ_KEY=$("$ENGAGE_BIN" keys create --database "$(url "$1")" --app "$APP" --role read 2>>"$WORK/engage.log")
    [[ $KEY == egk_* && $READ_KEY == egk_* ]] || die "engage keys create printed no key"
}

declare -A RESULTS=()
ROWS=()
record() { # scenario round rto rpo note
    RESULTS[$1]+="$3 "
    ROWS+=("| $1 | $2 | $4 | $3 | $5 |")
    log "$1 round $2: RTO $3 s, RPO $4 ($5)"
}

for scenario in $SCENARIOS; do
    for round in $(seq 1 "$ROUNDS"); do
        name="$scenario-$round"
        case $scenario in
        engage-killed|postgres-restart|postgres-crash)
            new_primary "$name"
            setup_database "$name"
            start_server "$(url "$name")"
            wait_until 60 "engage /readyz" ready
            start_load 0
            before=$(now); wait_until 60 "acknowledgements" acknowledged_at_least "$before" 50
            t0=$(now)
            case $scenario in
            engage-killed)
                kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
                start_server "$(url "$name")" ;;
            postgres-restart) pg pg_ctl restart -D "$WORK/$name" -m fast -w -t 120 >/dev/null ;;
            postgres-crash) kill_cluster "$name"; start_cluster "$name" ;;
            esac
            wait_until 120 "an acknowledgement after the failure" acknowledged_at_least "$t0" 1
            sleep 1
            stop_load
            rto=$(longest_gap_after "$t0")
            read -r lost duplicated < <(lost_on "$name")
            record "$scenario" "$round" "$rto" "$lost lost" "$duplicated stored twice"
            stop_server; kill_cluster "$name" ;;
        replica-lost)
            new_primary "$name"
            setup_database "$name"
            new_standby "$name-standby" "$name"
            start_server "$(url "$name")" --read-database "$(url "$name-standby")"
            wait_until 60 "engage /readyz" ready
            start_load 1
            replica_read() { awk '$3 == 200 && $4 == "replica"' "$WORK/load/reader.log" 2>/dev/null | grep -q .; }
            wait_until 60 "a report read on the replica" replica_read
            t0=$(now)
            kill_cluster "$name-standby"
            answered_after() { awk -v t="$t0" '$1 > t && $3 == 200' "$WORK/load/reader.log" | grep -q .; }
            wait_until 60 "a report after the replica's loss" answered_after
            first=$(awk -v t="$t0" '$1 > t && $3 == 200 { print $2 }' "$WORK/load/reader.log" | sort -n | head -1)
            rto=$(seconds_between "$t0" "$first")
            sleep 2
            stop_load
            failed=$(awk -v t="$t0" '$1 > t && $3 != 200' "$WORK/load/reader.log" | wc -l)
            from=$(awk -v t="$t0" '$1 > t && $3 == 200 { n[$4]++ } END { for (d in n) printf "%s%s %d", (k++ ? ", " : ""), d, n[d] }' "$WORK/load/reader.log")
            read -r lost duplicated < <(lost_on "$name")
            record "$scenario" "$round" "$rto" "$lost lost" "reports after: $from; $failed not answered 200"
            stop_server; kill_cluster "$name" ;;
        async-primary-lost)
            new_primary "$name"
            setup_database "$name"
            new_standby "$name-standby" "$name"
            both="host=$WORK/$name,$WORK/$name-standby port=5432,5432 user=engage dbname=engage target_session_attrs=read-write connect_timeout=2"
            start_server "$both"
            wait_until 60 "engage /readyz" ready
            start_load 0
            before=$(now); wait_until 60 "acknowledgements" acknowledged_at_least "$before" 50
            behind=$(sql "$name" "SELECT coalesce(max(pg_current_wal_lsn() - flush_lsn), 0) FROM pg_stat_replication")
            t0=$(now)
            kill_cluster "$name"
            pg pg_ctl promote -D "$WORK/$name-standby" -w -t 120 >/dev/null
            wait_until 120 "an acknowledgement after the loss" acknowledged_at_least "$t0" 1
            sleep 1
            stop_load
            rto=$(longest_gap_after "$t0")
            read -r lost duplicated < <(lost_on "$name-standby")
            acknowledged=$(wc -l <"$WORK/acknowledged")
            record "$scenario" "$round" "$rto" "$lost lost" "of $acknowledged acknowledged; standby $behind bytes behind just before; $duplicated stored twice"
            stop_server; kill_cluster "$name-standby" ;;
        esac
    done
done

echo "### Recovery: RPO and RTO per failure"
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores, PostgreSQL $("$PG_BIN/postgres" --version | awk '{ print $3 }');"
echo "$CLIENTS clients retrying every ${RETRY_MS} ms; \`Benchmarks/recovery.sh\` (ROUNDS=$ROUNDS)."
echo
echo "| scenario | round | RPO (acknowledged events lost) | RTO (s): longest time without an acknowledgement, or to the first report | notes |"
echo "|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo
for scenario in $SCENARIOS; do
    echo "- $scenario: median RTO $(tr ' ' '\n' <<<"${RESULTS[$scenario]}" | grep . | median) s"
done
