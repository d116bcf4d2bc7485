# Helpers shared by Benchmarks/projector.sh and Benchmarks/lag.sh (sourced, not run). The caller
# sets SCRIPT (its name, for messages and usage), ROOT, BUILD, ENGAGE_BIN and WORK_PARENT.

log() { printf '%s %s: %s\n' "$(date +%H:%M:%S)" "$SCRIPT" "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage_error() { printf '%s: %s\nusage: see the settings in the header of Benchmarks/%s\n' "$SCRIPT" "$1" "$SCRIPT" >&2; exit 64; }
require_int() { [[ $2 =~ ^[0-9]+$ ]] && (( $2 >= $3 && $2 <= $4 )) || usage_error "$1=$2: expected an integer in $3...$4"; }

# Integer with thousands separators; arithmetic to 6 decimals; median of numbers on stdin.
grouped() { printf '%.0f' "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }
calc() { awk "BEGIN { printf \"%.6f\", $* }"; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Sets ENGAGE_BIN to the package's release build (built first when BUILD=1) unless it is set.
resolve_engage_bin() {
    if [[ -z $ENGAGE_BIN ]]; then
        if [[ $BUILD == 1 ]]; then
            log "swift build -c release"
            (cd "$ROOT" && swift build -c release >&2)
        fi
        ENGAGE_BIN="$ROOT/.build/release/engage"
    fi
    [[ -x $ENGAGE_BIN ]] || die "no engage executable at $ENGAGE_BIN (run without BUILD=0, or set ENGAGE_BIN)"
}

# Sets WORK to a new directory under WORK_PARENT named after $1.
make_work() {
    WORK=$(mktemp -d "$WORK_PARENT/engage-$1.XXXXXX")
    chmod 755 "$WORK" # the postgres user (when run as root) must reach the data directory inside
}
