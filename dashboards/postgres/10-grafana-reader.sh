#!/bin/sh
# Creates the read-only role that Grafana's data source logs in as. The postgres image runs this
# once, when it initializes an empty data volume (/docker-entrypoint-initdb.d). Tables and views
# that engage creates later (migrations, rebuilt read models) are readable
# through default privileges; the role cannot write, and its queries time out.
set -eu
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -v owner="$POSTGRES_USER" -v database="$POSTGRES_DB" \
    -v reader="${ENGAGE_GRAFANA_DB_USER:-engage_grafana}" \
    -v password="${ENGAGE_GRAFANA_DB_PASSWORD:-engage_grafana}" <<'SQL'
CREATE ROLE :"reader" LOGIN PASSWORD :'password';
ALTER ROLE :"reader" SET default_transaction_read_only = on;
ALTER ROLE :"reader" SET statement_timeout = '30s';
GRANT CONNECT ON DATABASE :"database" TO :"reader";
GRANT USAGE ON SCHEMA public TO :"reader";
GRANT SELECT ON ALL TABLES IN SCHEMA public TO :"reader";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT SELECT ON TABLES TO :"reader";
SQL
