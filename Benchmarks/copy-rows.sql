-- Rows for the psql \copy baseline of Benchmarks/ingest.sh, written to standard output in COPY's
-- text format, columns in the order of its \copy column list. The same `delivered` events
-- wrk/batch.lua sends (variant v = i % 997, the same formulas), as engage stores them.
--   psql CONNINFO -X -q -v rows=300000 -v app=ingest-bench -v ids=time -f copy-rows.sql > rows.tsv
-- ids=time: time-ordered event ids (UUIDv7 layout: milliseconds, then a counter), as EngageClient
-- and wrk/batch.lua make them, about 100 per millisecond; ids=random: ids all over the index.
COPY (
    SELECT CASE WHEN :'ids' = 'random' THEN md5('engage-ingest-bench-' || i)::uuid
                ELSE (substr(ms, 1, 8) || '-' || substr(ms, 9, 4) || '-7' || lpad(to_hex(i % 4096), 3, '0')
                      || '-8000-' || lpad(to_hex(i), 12, '0'))::uuid
           END,                                                         -- event_id
           :'app',                                                      -- app_id
           'apns-' || lpad(to_hex(i), 15, '0'),                         -- notification_id
           'delivered',                                                 -- type
           (ARRAY['new_photo', 'chat_message', 'promo_sale', 'breaking_news'])[v % 4 + 1],
           'device-' || (v * 7919) % 50000,                             -- device_id
           date_trunc('milliseconds', now()) - (i % 60000) * interval '1 millisecond',
           NULL,                                                        -- experiment_id
           NULL,                                                        -- experiment_arm
           format('{"attachment":{"kind":"image","format":"jpeg","bytes":%s,"source":"%s","download_ms":%s},'
                  '"outcome":"attached","processing_ms":%s,"time_will_expire":false,"network":"%s","strategy":"full"}',
                  150000 + (v * 89) % 90000, CASE WHEN v % 5 = 0 THEN 'cache' ELSE 'network' END,
                  300 + (v * 13) % 1700, 350 + (v * 17) % 1800,
                  CASE WHEN v % 2 = 0 THEN 'wifi' ELSE 'cellular' END)::jsonb
      FROM generate_series(0, :rows - 1) AS i,
           LATERAL (SELECT i % 997 AS v,
                           lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint - :rows / 100 + i / 100), 12, '0') AS ms
                   ) AS variant
) TO STDOUT;
