#!/bin/sh
# The pg_auto_failover monitor: created on the first start (later starts find it and go on), with
# engage's failure-detection settings, then run in the foreground.
set -eu
pg_autoctl create monitor --hostname "${MONITOR_HOSTNAME:-monitor}" --auth "${PGAF_AUTH:-trust}" --ssl-self-signed
marker="# engage: failure detection"
grep -qF "$marker" "$PGDATA/postgresql.conf" || cat /usr/local/share/engage-ha/monitor.conf >>"$PGDATA/postgresql.conf"
exec pg_autoctl run
