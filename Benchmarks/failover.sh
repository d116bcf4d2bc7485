#!/usr/bin/env bash
# Failover benchmark (issue 18): the time from losing the PostgreSQL primary to the first event
# engage acknowledges again, on a pg_auto_failover formation built on this machine; prints a
# markdown table for BENCHMARKS.md.
#
#   Benchmarks/failover.sh                 build release, ROUNDS kills with each of the settings
#   BUILD=0 ROUNDS=5 SETTINGS=fast Benchmarks/failover.sh
#   VICTIM=secondary Benchmarks/failover.sh   the synchronous secondary lost instead
#
# In one run, in a new directory under WORK_PARENT: a monitor and two nodes (three clusters, run
# by pg_autoctl as the postgres user when run as root, --auth trust --no-ssl, free ports), the
# secondary synchronous; `engage serve` on the multi-host URL
# (postgresql://postgres@127.0.0.1:P1,127.0.0.1:P2/engage?target_session_attrs=read-write&connect_timeout=2);
# CLIENTS curl loops, each sending one new event per request and resending it every RETRY_MS
# until a 200 acknowledges it. Each round waits until the formation is settled (a primary with a
# synchronous secondary) and events are acknowledged, then kills the primary node (its keeper,
# postmaster and all their processes, stopped together, then SIGKILL) and measures from the kill
# to the end of the first request that started after the kill and got a 200, and from the kill to
# the moment the monitor reports the new primary writable (wait_primary); then it restarts the
# lost node's keeper, which rejoins as secondary (pg_rewind), and the next round kills the other
# node. SETTINGS=both measures pg_auto_failover's defaults first (about 50 s) as the baseline,
# then the shortened detection of docs/high-availability.md, each for ROUNDS rounds; the formation
# is the same, its settings changed in between. At the end every acknowledged event must be in
# the log exactly once. The timings are dominated by timeouts (health checks, the demotion wait),
# so a busy machine moves them by little. Progress goes to stderr, the report to stdout. Ctrl-C
# or SIGTERM stops everything it started and removes the run's directory.
#
# With VICTIM=secondary each round kills the secondary instead: commits wait for it until the
# monitor moves the primary to wait_primary (synchronous replication off), engage answering 503
# to those that wait longer than its --commit-timeout (10 s); the time is from the kill to the
# first request started after it that was acknowledged, and to the monitor's wait_primary.
#
# Settings (environment):
#   ROUNDS=5             kills per setting, 1-20
#   SETTINGS=both        fast, default or both
#   VICTIM=primary       primary or secondary: the node each round kills
#   CLIENTS=4            load loops, 1-32
#   RETRY_MS=100         pause between a client's attempts after a refusal or no answer
#   BUILD=1              run `swift build -c release` first (ignored when ENGAGE_BIN is set)
#   ENGAGE_BIN           engage executable (default: the package's release build)
#   WORK_PARENT=/var/tmp where the run's directory is made; KEEP_WORK=0 (1 keeps it)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=${ROUNDS:-5}
SETTINGS=${SETTINGS:-both}
VICTIM=${VICTIM:-primary}
APP=failover-bench

SCRIPT=failover.sh
USAGE="[ROUNDS=n] [SETTINGS=fast|default|both] [VICTIM=primary|secondary] [BUILD=0] Benchmarks/failover.sh (settings in the header)"
source "$ROOT/Benchmarks/common.sh"
require_int ROUNDS "$ROUNDS" 1 20
case $SETTINGS in fast) PHASES=(fast) ;; default) PHASES=(default) ;; both) PHASES=(default fast) ;;
    *) usage_error "SETTINGS=$SETTINGS: expected fast, default or both" ;; esac
[[ $VICTIM == primary || $VICTIM == secondary ]] || usage_error "VICTIM=$VICTIM: expected primary or secondary"
command -v pg_autoctl >/dev/null || die "pg_autoctl is missing: bash scripts/install-deps"
command -v curl >/dev/null || die "curl is missing"

PG_BIN=
for version in $(ls /usr/lib/postgresql 2>/dev/null | sort -rn); do
    if [[ -e /usr/share/postgresql/$version/extension/pgautofailover.control ]]; then PG_BIN=/usr/lib/postgresql/$version/bin; break; fi
done
[[ -n $PG_BIN ]] || die "no installed PostgreSQL has the pgautofailover extension (postgresql-N-auto-failover)"

resolve_engage "$ROOT"

WORK=$(mktemp -d "$WORK_PARENT/engage-failover-XXXXXX")
chmod 755 "$WORK"
AS_POSTGRES=()
if [[ $(id -u) == 0 ]]; then chown postgres: "$WORK"; AS_POSTGRES=(runuser -u postgres --); fi
mkdir -p "$WORK/run" "$WORK/load"
[[ $(id -u) == 0 ]] && chown postgres: "$WORK/run"
# pg_autoctl keeps its configuration, state and pid files under these, all in the run's directory.
autoctl() {
    "${AS_POSTGRES[@]}" env HOME="$WORK" XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" XDG_RUNTIME_DIR="$WORK/run" \
        PATH="$PG_BIN:/usr/bin:/bin" pg_autoctl "$@"
}

declare -A KEEPER=()
SERVER_PID=
LOAD_PIDS=()
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    touch "$WORK/load/stop"
    for pid in "${LOAD_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    # Not `pg_autoctl stop`: after a SIGKILL its pid file names a pid that may belong to anyone by
    # now. The keepers are this script's own children, so their process trees are known.
    for name in "${!KEEPER[@]}"; do kill_node "$name"; done
    if [[ $KEEP_WORK == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
    exit $status
}
trap_cleanup

PORTS=()
while (( ${#PORTS[@]} < 4 )); do
    port=$(free_port)
    [[ " ${PORTS[*]} " == *" $port "* ]] || PORTS+=("$port")
done
MONITOR_PORT=${PORTS[0]}; declare -A NODE_PORT=([node1]=${PORTS[1]} [node2]=${PORTS[2]}); HTTP_PORT=${PORTS[3]}
MONITOR_URL="postgresql://postgres@127.0.0.1:$MONITOR_PORT/pg_auto_failover"
URL="postgresql://postgres@127.0.0.1:${NODE_PORT[node1]},127.0.0.1:${NODE_PORT[node2]}/engage?target_session_attrs=read-write&connect_timeout=2"
monitor_sql() { psql -qAtX "$MONITOR_URL" -c "$1"; }
node_sql() { psql -qAtX "postgresql://postgres@127.0.0.1:${NODE_PORT[$1]}/postgres?connect_timeout=2" -c "$2"; }

start_keeper() { # name
    autoctl run --pgdata "$WORK/$1" >>"$WORK/$1.log" 2>&1 &
    KEEPER[$1]=$!
}

kill_node() { # name: the keeper and every process of it (the postmaster and its children), at once
    local tree
    tree=$(process_tree "${KEEPER[$1]}")
    kill -STOP $tree 2>/dev/null || true
    kill -KILL $tree 2>/dev/null || true
    wait "${KEEPER[$1]}" 2>/dev/null || true
    unset "KEEPER[$1]"
}

# One node primary and the other its synchronous secondary, as reported and as assigned.
PRIMARY=
settled() {
    local states
    states=$(monitor_sql "SELECT nodename, reportedstate, goalstate FROM pgautofailover.node ORDER BY nodeid" 2>/dev/null) || return 1
    grep -q '|primary|primary$' <<<"$states" && grep -q '|secondary|secondary$' <<<"$states" || return 1
    PRIMARY=$(grep '|primary|primary$' <<<"$states" | cut -d'|' -f1)
    [[ $(node_sql "$PRIMARY" "SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')" 2>/dev/null) -ge 1 ]]
}

# The monitor's failure detection: pg_auto_failover's defaults, or docs/high-availability.md's.
# The keepers' network partition timeout is 3 s throughout (set before they first start), below
# either primary_demote_timeout: changing it on a running keeper (`pg_autoctl config set` or
# `reload`) signals the pid in its pid file, which after a SIGKILL may be anyone's.
apply_settings() { # fast|default
    local names=(health_check_period health_check_timeout health_check_max_retries health_check_retry_delay
                 node_considered_unhealthy_timeout primary_demote_timeout)
    local fast=(1000 1000 1 500 3000 5000)
    for index in "${!names[@]}"; do
        if [[ $1 == fast ]]; then monitor_sql "ALTER SYSTEM SET pgautofailover.${names[$index]} = ${fast[$index]}" >/dev/null
        else monitor_sql "ALTER SYSTEM RESET pgautofailover.${names[$index]}" >/dev/null; fi
    done
    monitor_sql "SELECT pg_reload_conf()" >/dev/null
}

log "formation in $WORK (monitor :$MONITOR_PORT, node1 :${NODE_PORT[node1]}, node2 :${NODE_PORT[node2]})"
autoctl create monitor --pgctl "$PG_BIN/pg_ctl" --pgdata "$WORK/monitor" --pgport "$MONITOR_PORT" --hostname 127.0.0.1 \
    --auth trust --no-ssl >>"$WORK/monitor.log" 2>&1
start_keeper monitor
monitor_ready() { monitor_sql "SELECT 1" >/dev/null 2>&1; }
wait_until 60 "monitor" monitor_ready
for name in node1 node2; do
    autoctl create postgres --pgctl "$PG_BIN/pg_ctl" --pgdata "$WORK/$name" --pgport "${NODE_PORT[$name]}" --hostname 127.0.0.1 \
        --name "$name" --dbname engage --monitor "postgres://autoctl_node@127.0.0.1:$MONITOR_PORT/pg_auto_failover" \
        --auth trust --no-ssl >>"$WORK/$name.log" 2>&1 &
    creating=$!
    # The secondary's base backup waits for a checkpoint at the primary's pace unless one is asked for.
    while kill -0 "$creating" 2>/dev/null; do
        [[ $name == node2 ]] && node_sql node1 "CHECKPOINT" >/dev/null 2>&1 || true
        sleep 0.5
    done
    wait "$creating" || die "pg_autoctl create postgres failed for $name (see $WORK/$name.log)"
    autoctl config set --pgdata "$WORK/$name" timeout.network_partition_timeout 3 >/dev/null
    start_keeper "$name"
done
apply_settings fast
wait_until 300 "settled formation" settled

"$ENGAGE_BIN" migrate --database "$URL" >>"$WORK/engage.log" 2>&1
KEY=$("$ENGAGE_BIN" keys create --database "$URL" --app "$APP" --name failover-benchmark 2>>"$WORK/engage.log")
[[ $KEY == egk_* ]] || die "engage keys create printed no key"
"$ENGAGE_BIN" serve --database "$URL" --listen "127.0.0.1:$HTTP_PORT" --projector off --scheduler off >>"$WORK/engage.log" 2>&1 &
SERVER_PID=$!
wait_until 60 "engage /readyz" curl -sf -o /dev/null "http://127.0.0.1:$HTTP_PORT/readyz"

for c in $(seq 1 "$CLIENTS"); do client "$c" & LOAD_PIDS+=($!); done


declare -A RESULTS=()
ROWS=()
for phase in "${PHASES[@]}"; do
    apply_settings "$phase"
    for round in $(seq 1 "$ROUNDS"); do
        wait_until 300 "settled formation" settled
        now=$(date +%s.%N)
        wait_until 60 "acknowledgements before the kill" acknowledged_at_least "$now" 20
        victim=$PRIMARY
        [[ $VICTIM == secondary ]] && { [[ $PRIMARY == node1 ]] && victim=node2 || victim=node1; }
        kill_node "$victim"
        killed=$(date +%s.%N)
        log "$phase round $round: killed $victim"
        wait_until 300 "acknowledgement after the kill" acknowledged_at_least "$killed" 1
        first=$(first_ack_after "$killed")
        # Writes may resume before the keeper reports the new state: wait for the monitor's record.
        promoted_at() { monitor_sql "SELECT extract(epoch FROM min(eventtime)) FROM pgautofailover.event
                                     WHERE reportedstate = 'wait_primary' AND nodename <> '$victim' AND eventtime > to_timestamp($killed)"; }
        recorded() { [[ -n $(promoted_at) ]]; }
        wait_until 60 "the monitor's record of a writable primary" recorded
        promoted=$(promoted_at)
        ack_s=$(awk -v a="$first" -v b="$killed" 'BEGIN { printf "%.2f", a - b }')
        writable_s=$(awk -v a="$promoted" -v b="$killed" 'BEGIN { printf "%.2f", a - b }')
        log "$phase round $round: first acknowledgement after ${ack_s}s (new primary writable after ${writable_s}s)"
        RESULTS[$phase]+="$ack_s "
        ROWS+=("| $phase | $round | $victim | $writable_s | $ack_s |")
        start_keeper "$victim"
    done
done
wait_until 300 "settled formation" settled
touch "$WORK/load/stop"
for pid in "${LOAD_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
LOAD_PIDS=()

# Every acknowledged event is in the log exactly once.
awk '$3 == 200 { print $4 }' "$WORK"/load/client-*.log | sort -u >"$WORK/acknowledged"
psql -qAtX "$URL" -c "SELECT event_id FROM events WHERE app_id = '$APP'" | sort >"$WORK/stored"
acknowledged=$(wc -l <"$WORK/acknowledged")
lost=$(comm -23 "$WORK/acknowledged" <(sort -u "$WORK/stored") | wc -l)
duplicated=$(( $(wc -l <"$WORK/stored") - $(sort -u "$WORK/stored" | wc -l) ))
refusals=$(awk '$3 != 200 { n[$3 == "000" ? "no answer" : $3]++ } END { for (s in n) printf "%s%s: %d", (k++ ? ", " : ""), s, n[s] }' \
    "$WORK"/load/client-*.log)

echo "### Failover: from the $VICTIM's loss to the first acknowledged event"
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores, PostgreSQL $("$PG_BIN/postgres" --version | awk '{ print $3 }'), $(pg_autoctl --version | head -1);"
echo "$CLIENTS clients retrying every ${RETRY_MS} ms; \`Benchmarks/failover.sh\` (ROUNDS=$ROUNDS SETTINGS=$SETTINGS VICTIM=$VICTIM)."
echo
echo "| settings | round | node killed | monitor reports a primary writing alone, wait_primary (s) | first acknowledgement (s) |"
echo "|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo
for phase in "${PHASES[@]}"; do
    echo "- $phase settings: median $(tr ' ' '\n' <<<"${RESULTS[$phase]}" | grep . | median) s from the kill to the first acknowledged event"
done
if [[ $SETTINGS == both ]]; then
    ratio=$(awk -v f="$(tr ' ' '\n' <<<"${RESULTS[fast]}" | grep . | median)" -v d="$(tr ' ' '\n' <<<"${RESULTS[default]}" | grep . | median)" \
        'BEGIN { printf "%.2f", f / d }')
    echo "- fast / default: $ratio"
fi
echo "- $acknowledged events acknowledged, $lost lost, $duplicated duplicated; refusals: ${refusals:-none}"
(( lost == 0 && duplicated == 0 )) || die "acknowledged events were lost or duplicated"
