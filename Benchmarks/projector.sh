#!/usr/bin/env bash
# Projector against ingestion in one run (issue 19, point 1): phase A of Benchmarks/ingest.sh
# (100-event HTTP batches, unpaced) and `engage bench project` (catch-up of the projector over a
# log of EVENTS events from an empty read model), alternately ROUNDS times; prints both medians
# and the ratio projector ÷ phase A (goal: at least 1.5).
#
#   Benchmarks/projector.sh                          build release, 3 rounds (about 10 minutes)
#   BUILD=0 ROUNDS=1 DURATION=5 EVENTS=200000 Benchmarks/projector.sh     a short check
#
# Each round runs ingest.sh as it is (its own fresh PostgreSQL, warm-up, \copy baseline and
# phases A, B and C; only A is used here) and then `engage bench project` on a PostgreSQL of its
# own in a new directory (the log is filled once, in the first round, and kept). Nothing runs
# beside either: the projector is off during ingest.sh, no load runs during bench project.
#
# Settings (environment):
#   BUILD=1          run `swift build -c release` first (ignored when ENGAGE_BIN is set)
#   ENGAGE_BIN       engage executable (default: the package's release build)
#   ROUNDS=3         alternations of phase A and bench project, 1-9
#   DURATION=20      seconds of phase A (ingest.sh's DURATION), 1-30
#   EVENTS=1000000   events in the projector's log (four per notification), 4000-100000000
#   PROJECT_ROUNDS=3 catch-ups per bench project run (its median is used), 1-20
#   BATCH=           the projector's batch size (default: engage's)
#   IDS=time         ingest.sh's event ids: time or random
#   WORK_PARENT=/var/tmp   where the run's directory is made
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-1}
ENGAGE_BIN=${ENGAGE_BIN:-}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-20}
EVENTS=${EVENTS:-1000000}
PROJECT_ROUNDS=${PROJECT_ROUNDS:-3}
BATCH=${BATCH:-}
IDS=${IDS:-time}
WORK_PARENT=${WORK_PARENT:-/var/tmp}

SCRIPT=projector.sh
# shellcheck source=Benchmarks/common.sh
source "$ROOT/Benchmarks/common.sh"
require_int ROUNDS "$ROUNDS" 1 9
require_int DURATION "$DURATION" 1 30
require_int EVENTS "$EVENTS" 4000 100000000
require_int PROJECT_ROUNDS "$PROJECT_ROUNDS" 1 20
[[ -z $BATCH ]] || require_int BATCH "$BATCH" 100 100000
[[ $IDS == time || $IDS == random ]] || usage_error "IDS=$IDS: expected time or random"

resolve_engage_bin

make_work projector
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [[ -f $WORK/pg/postmaster.pid ]]; then
        "$ENGAGE_BIN" db stop --data-dir "$WORK/pg" >/dev/null 2>&1 || log "could not stop PostgreSQL in $WORK/pg"
    fi
    if (( status == 0 || status == 130 || status == 143 )); then rm -rf "$WORK"; else log "kept $WORK"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

project_args=(bench project --data-dir "$WORK/pg" --events "$EVENTS" --rounds "$PROJECT_ROUNDS")
[[ -z $BATCH ]] || project_args+=(--batch "$BATCH")

INGEST_RATES="" PROJECT_RATES="" ROWS=""
for round in $(seq "$ROUNDS"); do
    log "round $round/$ROUNDS: Benchmarks/ingest.sh (phase A, ${DURATION} s)"
    # BATCH here is the projector's; ingest.sh reads BATCH as its request size: phase A of record is 100.
    BATCH=100 ENGAGE_BIN=$ENGAGE_BIN DURATION=$DURATION IDS=$IDS WORK_PARENT=$WORK_PARENT \
        "$ROOT/Benchmarks/ingest.sh" >"$WORK/ingest-$round.md" 2>"$WORK/ingest-$round.log" \
        || { tail -20 "$WORK/ingest-$round.log" >&2; die "ingest.sh failed in round $round"; }
    # "| A: 100-event batches, 16 connections | 111,081 events/s | ..."
    ingest=$(sed -n 's/^| A: [^|]*| \([0-9,]*\) events\/s |.*/\1/p' "$WORK/ingest-$round.md" | tr -d ,)
    [[ -n $ingest ]] || { cat "$WORK/ingest-$round.md" >&2; die "no phase A rate in ingest.sh's report (round $round)"; }

    log "round $round/$ROUNDS: engage ${project_args[*]}"
    "$ENGAGE_BIN" "${project_args[@]}" >"$WORK/project-$round.txt" 2>"$WORK/project-$round.log" \
        || { tail -20 "$WORK/project-$round.log" >&2; die "engage bench project failed in round $round"; }
    # "projector catch-up: median 9.87 s for 1000000 events = 101316 events/s (batch 20000); ..."
    project=$(sed -n 's/^projector catch-up: .* = \([0-9]*\) events\/s .*/\1/p' "$WORK/project-$round.txt")
    [[ -n $project ]] || { cat "$WORK/project-$round.txt" >&2; die "no rate in bench project's output (round $round)"; }

    log "round $round: phase A $(grouped "$ingest") events/s, projector $(grouped "$project") events/s, ratio $(ratio "$project" "$ingest")"
    INGEST_RATES+="$ingest " PROJECT_RATES+="$project "
    ROWS+="| $round | $(grouped "$ingest") | $(grouped "$project") | $(ratio "$project" "$ingest")× |"$'\n'
done
"$ENGAGE_BIN" db stop --data-dir "$WORK/pg" >/dev/null 2>&1 || true

INGEST_MEDIAN=$(echo "$INGEST_RATES" | median)
PROJECT_MEDIAN=$(echo "$PROJECT_RATES" | median)
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cat <<EOF

### Projector against ingestion ($(date -u +%Y-%m-%d), engage $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs: ${cpu_model:-unknown})

\`ROUNDS=$ROUNDS DURATION=$DURATION EVENTS=$EVENTS PROJECT_ROUNDS=$PROJECT_ROUNDS BATCH=${BATCH:-default} IDS=$IDS Benchmarks/projector.sh\`: per round, phase A of Benchmarks/ingest.sh (100-event batches over 16 connections, ${DURATION} s, events counted in the log) and then \`engage bench project --events $EVENTS --rounds $PROJECT_ROUNDS${BATCH:+ --batch $BATCH}\` on a PostgreSQL of its own (median of $PROJECT_ROUNDS catch-ups from an empty read model); nothing else of this benchmark runs beside either.

| round | phase A events/s | projector events/s | projector ÷ A |
|---:|---:|---:|---:|
${ROWS}
Medians: phase A $(grouped "$INGEST_MEDIAN") events/s, projector $(grouped "$PROJECT_MEDIAN") events/s; projector ÷ phase A $(ratio "$PROJECT_MEDIAN" "$INGEST_MEDIAN")× (goal ≥ 1.5×).
EOF
