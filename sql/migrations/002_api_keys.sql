-- API keys: only a SHA-256 hash of each key is stored. A key is `egk_<key_id>_<secret>`; the
-- key id finds the row, the hash of the whole key is compared in constant time.
CREATE TABLE api_keys (
    key_id     text        PRIMARY KEY,
    app_id     text        NOT NULL,
    role       text        NOT NULL CHECK (role IN ('ingest', 'read', 'admin')),
    key_hash   text        NOT NULL,
    name       text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX api_keys_app ON api_keys (app_id);
