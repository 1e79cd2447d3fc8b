-- Dashboard sessions (sessions_postgres.go): one row per signed-in
-- session, read by every request that carries its cookie and deleted at
-- sign-out or revocation. The cookie's signing key is never stored: it
-- comes from the operator's secret or Caddy's data directory, so the
-- secret that 015 kept here (the only row of shortener_secrets) goes.
CREATE TABLE shortener_ui_sessions (
    id              bytea       PRIMARY KEY,
    key_fingerprint text        NOT NULL,
    scope           smallint    NOT NULL,
    signer          bytea       NOT NULL,
    created_at      timestamptz NOT NULL,
    last_seen_at    timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL
);
CREATE INDEX shortener_ui_sessions_key ON shortener_ui_sessions (key_fingerprint, created_at);
CREATE INDEX shortener_ui_sessions_expiry ON shortener_ui_sessions (expires_at);

DROP TABLE shortener_secrets;
