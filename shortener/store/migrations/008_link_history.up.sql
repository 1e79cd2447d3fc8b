-- Link edits (issue 15): a version per link and the history of changes.
--
-- version is 1 for a new link and for every link stored before this
-- migration, one more with every change (edit or revocation); the API's
-- ETag is derived from it. A constant default: PostgreSQL adds the column
-- without rewriting the table.
--
-- shortener_link_history holds one row per edit, written in the edit's
-- transaction: the version it produced, when, the fingerprint of the API
-- key that made it (a hex prefix of the key's SHA-256, never the key) and
-- each changed field's old and new value as the API shows them. Its
-- primary key serves "newest first, below a version" for one code.
ALTER TABLE shortener_links ADD COLUMN version bigint NOT NULL DEFAULT 1;

CREATE TABLE shortener_link_history (
    code    text        NOT NULL,
    version bigint      NOT NULL,
    at      timestamptz NOT NULL,
    key_fp  text        NOT NULL CHECK (char_length(key_fp) <= 64),
    changes jsonb       NOT NULL,
    PRIMARY KEY (code, version)
);
