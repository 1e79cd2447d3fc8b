-- Webhooks (issue 36): endpoints, with their cursor in shortener_events
-- and the lease of the instance delivering to them; their messages (one
-- per event, or a batch of clicks) with bodies fixed when made; and the
-- attempts of each message. Keys are the endpoints' signing secrets
-- (HMAC needs them in clear): [{"secret": "whsec_...", "until": RFC 3339
-- or null}], current first.
CREATE TABLE shortener_webhook_endpoints (
    id              text COLLATE "C" PRIMARY KEY,
    url             text        NOT NULL,
    description     text        NOT NULL DEFAULT '',
    types           text[]      NOT NULL,
    tags            text[]      NOT NULL DEFAULT '{}',
    codes           text[]      NOT NULL DEFAULT '{}',
    disabled        boolean     NOT NULL DEFAULT false,
    disabled_reason text        NOT NULL DEFAULT '',
    keys            jsonb       NOT NULL,
    batch           integer     NOT NULL DEFAULT 0,
    batch_wait_ms   bigint      NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    version         bigint      NOT NULL DEFAULT 1,
    cursor_tx       bigint      NOT NULL DEFAULT 0,
    cursor_seq      bigint      NOT NULL DEFAULT 0,
    lease_owner     text        NOT NULL DEFAULT '',
    lease_until     timestamptz
);

-- Message ids sort by creation time (webhook.NewID): listing newest first
-- walks (endpoint, id) backwards.
CREATE TABLE shortener_webhook_messages (
    id       text COLLATE "C" PRIMARY KEY,
    endpoint text        NOT NULL REFERENCES shortener_webhook_endpoints (id) ON DELETE CASCADE,
    type     text        NOT NULL,
    at       timestamptz NOT NULL,
    body     bytea       NOT NULL,
    events   integer     NOT NULL,
    state    text        NOT NULL,
    attempts integer     NOT NULL DEFAULT 0,
    next_at  timestamptz NOT NULL,
    series   integer     NOT NULL DEFAULT 0,
    made_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shortener_webhook_messages_due ON shortener_webhook_messages (endpoint, next_at) WHERE state = 'pending';
CREATE INDEX shortener_webhook_messages_list ON shortener_webhook_messages (endpoint, id);
CREATE INDEX shortener_webhook_messages_made ON shortener_webhook_messages (made_at);

CREATE TABLE shortener_webhook_attempts (
    message    text        COLLATE "C" NOT NULL REFERENCES shortener_webhook_messages (id) ON DELETE CASCADE,
    n          integer     NOT NULL,
    at         timestamptz NOT NULL,
    status     integer     NOT NULL,
    latency_us bigint      NOT NULL,
    body       bytea       NOT NULL,
    error      text        NOT NULL,
    PRIMARY KEY (message, n)
);
