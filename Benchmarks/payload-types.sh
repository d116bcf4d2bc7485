#!/usr/bin/env bash
# What the log's `payload jsonb` costs PostgreSQL against `json` and `text`, on payloads engage
# wrote: the lever docs/scaling.md ("Where the next limit is") weighs for ingestion and the
# projector at the peak, and what it would cost the replays that extract fields with `->>`.
#
#   Benchmarks/payload-types.sh                   build release, 200,000 notifications (about 3 minutes)
#   BUILD=0 NOTIFICATIONS=20000 Benchmarks/payload-types.sh     a short check
#
# On engage's local PostgreSQL in a new directory under WORK_PARENT: `engage simulate --direct`
# fills the log, its payloads go to a file as jsonb renders them, then ROUNDS times, alternated
# between the types: COPY of the file into an empty table of one `payload` column (ingestion's COPY
# parses each payload as the column's type: `jsonb_recv` is `jsonb_in` behind a version byte), COPY
# of that table out in binary (the projector's read renders each payload), and the experiment
# replay's extraction (`->>` of three fields, ExperimentReplay's CASE) over it. Each figure is the
# median of the rounds, per payload, with the ratio to `text` measured in the same rounds.
#
# Settings (environment):
#   BUILD=1 ENGAGE_BIN=        as in the other scripts (Benchmarks/common.sh)
#   NOTIFICATIONS=200000       notifications simulated (about 3.5 events each)
#   ROUNDS=5                   alternations, 1-15
#   WORK_PARENT=/var/tmp KEEP_WORK=0
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NOTIFICATIONS=${NOTIFICATIONS:-200000}
ROUNDS=${ROUNDS:-5}

SCRIPT=payload-types.sh
source "$ROOT/Benchmarks/common.sh"
require_int NOTIFICATIONS "$NOTIFICATIONS" 1000 5000000
require_int ROUNDS "$ROUNDS" 1 15

resolve_engage_bin
local_postgres_work payload-types

engage db start >/dev/null 2>"$WORK/db.log"
log "loading $NOTIFICATIONS notifications"
engage simulate --direct --notifications "$NOTIFICATIONS" --devices 10000 --batch 1000 --max-seconds 3600 >"$WORK/load.txt" 2>>"$WORK/db.log"
chmod 777 "$WORK"
sql -c "COPY (SELECT payload FROM events) TO '$WORK/payloads.txt'"
read -r rows bytes < <(sql -F ' ' -c "SELECT count(*), sum(octet_length(payload::text)) FROM events")
types=(jsonb json text)
for type in "${types[@]}"; do sql -c "CREATE UNLOGGED TABLE payload_$type (payload $type)"; done

# Milliseconds of one statement, as the server reports it (psql's \timing includes the round trip,
# which is the same for every type).
timed() { sql -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1; }
extract() { # type
    echo "SELECT count(CASE WHEN payload ->> 'processing_ms' IS NOT NULL THEN 1 END),
                 count(payload ->> 'presentation'), count(payload ->> 'text_input_length') FROM payload_$1"
}

declare -A copy_in copy_out replay
for round in $(seq "$ROUNDS"); do
    log "round $round/$ROUNDS"
    for type in "${types[@]}"; do
        sql -c "TRUNCATE payload_$type; CHECKPOINT"
        copy_in[$type]+="$(timed "COPY payload_$type FROM '$WORK/payloads.txt'") "
        sql -c "VACUUM (FREEZE) payload_$type"
        copy_out[$type]+="$(timed "COPY payload_$type TO '/dev/null' (FORMAT binary)") "
        # The replay reads `->>` of a jsonb column without rendering it; on json and text it parses.
        [[ $type == text ]] || replay[$type]+="$(timed "$(extract "$type")") "
    done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
per_row() { fixed "$(calc "$1 * 1000 / $rows")" 2; }
table=""
for type in "${types[@]}"; do
    in_ms=$(median <<<"${copy_in[$type]}"); out_ms=$(median <<<"${copy_out[$type]}")
    text_in=$(median <<<"${copy_in[text]}"); text_out=$(median <<<"${copy_out[text]}")
    if [[ $type == text ]]; then extraction="(none: text has no \`->>\`)"
    else extraction="$(per_row "$(median <<<"${replay[$type]}")") µs"; fi
    table+="| \`$type\` | $(per_row "$in_ms") µs ($(fixed "$(calc "$in_ms / $text_in")" 2)x) | $(per_row "$out_ms") µs ($(fixed "$(calc "$out_ms / $text_out")" 2)x) | $extraction |"$'\n'
done

cat <<EOF

### The payload's column type ($(date -u +%Y-%m-%d), engage $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs)

\`NOTIFICATIONS=$NOTIFICATIONS ROUNDS=$ROUNDS Benchmarks/payload-types.sh\`: $(grouped "$rows") payloads engage wrote ($(grouped "$(calc "$bytes / $rows")") bytes each as jsonb renders them), into an unlogged table of one column of each type; medians of $ROUNDS alternated rounds, per payload, with the ratio to \`text\` in the same rounds.

| column type | COPY in (ingestion) | COPY out, binary (the projector's read) | three fields by \`->>\` (the replays) |
|---|---:|---:|---:|
$table
EOF
