-- API key hashes are for engage alone. Read-only roles made for dashboards are usually granted
-- SELECT on every table (dashboards/postgres/10-grafana-reader.sh grants it by default
-- privileges, before the migrations create the tables); take api_keys back from every role but
-- its owner. A role granted it later by hand keeps what it was given.
DO $$
DECLARE
    grantee_name text;
BEGIN
    FOR grantee_name IN
        SELECT DISTINCT grantee FROM information_schema.role_table_grants
        WHERE table_schema = current_schema() AND table_name = 'api_keys'
          AND grantee <> (SELECT tableowner FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'api_keys')
    LOOP
        IF grantee_name = 'PUBLIC' THEN
            EXECUTE 'REVOKE ALL ON api_keys FROM PUBLIC';
        ELSE
            EXECUTE format('REVOKE ALL ON api_keys FROM %I', grantee_name);
        END IF;
    END LOOP;
END
$$;
