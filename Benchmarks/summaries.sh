#!/usr/bin/env bash
# The log's occurred_at summaries (migration 020): what they save CUPED's pre-period read, and what
# the partition maintenance's summarize pass costs.
#
#   Benchmarks/summaries.sh                     build release, 1,000,000 notifications (about 12 minutes)
#   BUILD=0 NOTIFICATIONS=100000 Benchmarks/summaries.sh    a short check
#
# On engage's local PostgreSQL in a new directory under WORK_PARENT:
#   1. the CUPED data set of BENCHMARKS.md ("CUPED at 1,000,000 notifications"): `engage simulate
#      --direct --pre-period`, then the experiment's own traffic, all in this week's partition;
#      autovacuum is then turned off on the partitions, so that only this script summarizes.
#   2. ROUNDS times, alternated: every range of the partitions' occurred_at index unsummarized
#      (brin_desummarize_range), the pre-period's window read (PrePeriodReader's WHERE, counted,
#      EXPLAIN ANALYZE: time, heap blocks, rows rechecked); then engage's summarize pass
#      (engage_summarize_occurred_at in 2-s steps, as the partition maintenance runs it; its time,
#      steps, ranges), the pass again with nothing left to summarize, and the window read again.
#
# Settings (environment):
#   BUILD=1 ENGAGE_BIN=        as in the other scripts (Benchmarks/common.sh)
#   NOTIFICATIONS=1000000      notifications of the experiment, as many in the pre-period
#   DEVICES=100000             devices they go to
#   ROUNDS=2                   alternations, 1-9
#   WORK_PARENT=/var/tmp KEEP_WORK=0
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NOTIFICATIONS=${NOTIFICATIONS:-1000000}
DEVICES=${DEVICES:-100000}
ROUNDS=${ROUNDS:-2}

SCRIPT=summaries.sh
source "$ROOT/Benchmarks/common.sh"
require_int NOTIFICATIONS "$NOTIFICATIONS" 1000 10000000
require_int DEVICES "$DEVICES" 10 10000000
require_int ROUNDS "$ROUNDS" 1 9

resolve_engage_bin
local_postgres_work summaries
# Its answers' columns separated by spaces, as the reads below take them.
sql() { "$ENGAGE_BIN" db psql --data-dir "$WORK/pg" -- -XAtq -F ' ' "$@"; }

engage db start >/dev/null 2>"$WORK/db.log"
log "loading $NOTIFICATIONS notifications of a pre-period, then of the experiment"
engage simulate --direct --notifications "$NOTIFICATIONS" --devices "$DEVICES" --batch 1000 --spread 1 --pre-period --max-seconds 3600 >"$WORK/load.txt" 2>>"$WORK/db.log"
engage simulate --direct --notifications "$NOTIFICATIONS" --devices "$DEVICES" --batch 1000 --spread 1 --max-seconds 3600 >>"$WORK/load.txt" 2>>"$WORK/db.log"
(cd "$ROOT" && engage experiment create --file Examples/experiments/strategy-full-vs-adaptive.json) >/dev/null 2>>"$WORK/db.log"
sql -c "VACUUM ANALYZE events"
for partition in $(sql -c "SELECT name FROM event_partitions"); do
    sql -c "ALTER TABLE $partition SET (autovacuum_enabled = off)"
done
read -r events partition pages ranges < <(sql -c "
    SELECT (SELECT count(*) FROM events), name, pg_relation_size(name::regclass) / 8192, (pg_relation_size(name::regclass) / 8192 + 127) / 128
    FROM event_partitions ORDER BY pg_relation_size(name::regclass) DESC LIMIT 1")
# The pre-period's window as the analysis reads it: CUPED's 14 days before the experiment's first
# event (the experiment has no start_at), with PrePeriodReader's conditions.
# The bounds are literals, as the analysis passes them (a subquery would be read with the window).
read -r start < <(sql -c "SELECT to_char(min(occurred_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM events WHERE experiment_id = 'strategy-full-vs-adaptive'")
window="SELECT count(*) FROM events
    WHERE app_id = 'demo' AND type IN ('sent', 'delivered', 'displayed', 'expanded', 'action')
      AND experiment_id IS DISTINCT FROM 'strategy-full-vs-adaptive'
      AND occurred_at >= timestamptz '$start' - interval '14 days' AND occurred_at < timestamptz '$start'"
read -r windowed < <(sql -c "$window")
log "$events events, $windowed in the pre-period's window; $partition: $pages pages, $ranges ranges"

# "time_ms blocks rows_rechecked" of one window read: blocks read or hit by the whole plan (heap and
# index; each node counts its children and the parallel workers), rows rechecked per process.
read_window() {
    sql -c "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) $window" | python3 -c '
import json, sys
plan = json.load(sys.stdin)[0]
def walk(node):
    yield node
    for child in node.get("Plans", []): yield from walk(child)
rechecked = sum(n.get("Rows Removed by Index Recheck", 0) for n in walk(plan["Plan"]))
shared = plan["Plan"].get("Shared Read Blocks", 0) + plan["Plan"].get("Shared Hit Blocks", 0)
print("%.0f %d %d" % (plan["Execution Time"], shared, rechecked))'
}
# "seconds steps ranges" of one summarize pass over every partition, as EventPartitionMaintenance runs it.
summarize_pass() {
    local start steps=0 summarized=0 from count next
    start=$(now)
    for name in $(sql -c "SELECT name FROM event_partitions ORDER BY lower, name"); do
        from=0
        while [[ -n $from ]]; do
            read -r count next < <(sql -c "SELECT summarized, coalesce(next_block::text, '') FROM engage_summarize_occurred_at('$name', $from, '2 seconds')")
            steps=$((steps + 1)); summarized=$((summarized + count)); from=$next
        done
    done
    echo "$(fixed "$(calc "$(now) - $start")" 2) $steps $summarized"
}

rows=""
for round in $(seq "$ROUNDS"); do
    log "round $round/$ROUNDS"
    for name in $(sql -c "SELECT name FROM event_partitions WHERE pg_relation_size(name::regclass) > 0"); do
        sql -c "SELECT count(brin_desummarize_range('${name}_occurred_at_idx', b)) FROM generate_series(0, pg_relation_size('$name') / 8192 - 1, 128) b" >/dev/null
    done
    read -r cold_ms cold_blocks cold_rechecked < <(read_window)
    read -r pass_s pass_steps pass_ranges < <(summarize_pass)
    read -r again_s again_steps again_ranges < <(summarize_pass)
    read -r warm_ms warm_blocks warm_rechecked < <(read_window)
    rows+="| $round | $(grouped "$cold_ms") ms, $(grouped "$cold_blocks") blocks, $(grouped "$cold_rechecked") rechecked | ${pass_s} s, $pass_steps steps, $(grouped "$pass_ranges") ranges | ${again_s} s, $again_steps steps, $again_ranges ranges | $(grouped "$warm_ms") ms, $(grouped "$warm_blocks") blocks, $(grouped "$warm_rechecked") rechecked |"$'\n'
done

cat <<EOF

### occurred_at summaries ($(date -u +%Y-%m-%d), engage $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs)

\`NOTIFICATIONS=$NOTIFICATIONS DEVICES=$DEVICES ROUNDS=$ROUNDS Benchmarks/summaries.sh\`: $(grouped "$events") events, $(grouped "$windowed") of them in the pre-period's window; $partition: $(grouped "$pages") pages, $(grouped "$ranges") ranges of 128 pages. The window read is PrePeriodReader's WHERE, counted (EXPLAIN ANALYZE: execution time, blocks read or hit, rows rechecked per process); a pass is engage_summarize_occurred_at in 2-s steps over every partition.

| round | window read, no range summarized | summarize pass | pass again | window read, every range summarized |
|---:|---|---|---|---|
$rows
EOF
