#!/bin/sh
# A PostgreSQL node of the formation: registered with the monitor on the first start (the first
# node becomes primary, the next one copies it and follows as synchronous secondary; later starts
# find the node and go on), with the keeper's network partition timeout below the monitor's
# primary_demote_timeout, then run in the foreground.
#   NODE_NAME     this node's name and hostname (node1, node2)
#   PEER          the other node's hostname
#   MONITOR_URL   postgresql://autoctl_node@monitor/pg_auto_failover?sslmode=require
#   ENGAGE_DB     the database engage uses (created on the primary)
set -eu
: "${NODE_NAME:?}" "${PEER:?}" "${MONITOR_URL:?}" "${ENGAGE_DB:=engage}"
rm -f /tmp/created
# A new secondary's base backup starts with a checkpoint at the primary's pace (minutes on an
# idle server); asking the peer for one now and then while this node is created makes it start
# at once. Harmless when the peer is not primary or not there.
(
    while [ ! -e /tmp/created ]; do
        psql -qAtX "postgresql://postgres@$PEER/$ENGAGE_DB?connect_timeout=2" -c CHECKPOINT >/dev/null 2>&1 || true
        sleep 2
    done
) &
pg_autoctl create postgres --name "$NODE_NAME" --hostname "$NODE_NAME" --dbname "$ENGAGE_DB" --monitor "$MONITOR_URL" \
    --auth "${PGAF_AUTH:-trust}" --ssl-self-signed --pg-hba-lan
touch /tmp/created
pg_autoctl config set timeout.network_partition_timeout "${PARTITION_TIMEOUT:-3}"
exec pg_autoctl run
