-- Idempotent and reusing creates (issue 15).
--
-- custom: whether the link was created with a code its client chose. Only
-- links with generated codes are reused ("reuse": true). Which links stored
-- before this migration had custom codes is unknown, so they (and rows an
-- older version inserts during a rolling upgrade) count as custom and are
-- never reused: the constant default adds the column without rewriting the
-- table. This version always writes the column.
ALTER TABLE shortener_links ADD COLUMN custom boolean NOT NULL DEFAULT true;

-- Finding a reuse candidate: the live links with generated codes, by long
-- URL. A hash index: long URLs may exceed a btree entry's size limit.
-- Building it reads the table once, which may take longer than the pool's
-- statement_timeout on a large table.
SET LOCAL statement_timeout = 0;
CREATE INDEX shortener_links_reuse ON shortener_links USING hash (long_url)
    WHERE NOT custom AND revoked_at IS NULL;

-- One row per Idempotency-Key: scope is the fingerprint of the API key that
-- sent it (never the key), body_sha256 the digest of the raw request body,
-- status and body the answer to replay. A create inserts its row first in
-- its transaction, so a concurrent duplicate waits on the primary key until
-- the first commits (then replays its answer) or rolls back (then proceeds).
-- Rows older than 24 hours are ignored and pruned.
CREATE TABLE shortener_idempotency (
    scope       text COLLATE "C" NOT NULL,
    key         text COLLATE "C" NOT NULL CHECK (octet_length(key) BETWEEN 1 AND 255),
    body_sha256 bytea       NOT NULL CHECK (octet_length(body_sha256) = 32),
    status      smallint    NOT NULL,
    body        bytea       NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX shortener_idempotency_created ON shortener_idempotency (created_at);
