-- Secrets every instance on this database shares (ui_secret.go): the key
-- that signs dashboard session cookies. Created race-free (INSERT ... ON
-- CONFLICT DO NOTHING, then read): the first instance's value wins.
CREATE TABLE shortener_secrets (
    name       text        PRIMARY KEY,
    secret     bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
