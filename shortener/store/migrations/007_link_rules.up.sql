-- Per-link rules (issue 15): the redirect status, the start of the link's
-- window, a bound on the redirects served with its counter, and whether
-- the request's query is forwarded.
--
-- Constant defaults and NULLs: PostgreSQL adds the columns without
-- rewriting the table, and links stored before this migration (or inserted
-- by an older version during a rolling upgrade) read back with no rules.
-- 0 and NULL both mean "no rule" (rules.go). The bounds are checked by the
-- API and the stores; the constraints repeat them for other writers. NOT
-- VALID: existing rows hold the defaults, so the table need not be scanned
-- to prove it.
ALTER TABLE shortener_links
    ADD COLUMN redirect_status smallint    NOT NULL DEFAULT 0,
    ADD COLUMN valid_from      timestamptz,
    ADD COLUMN max_clicks      bigint      NOT NULL DEFAULT 0,
    ADD COLUMN forward_query   boolean,
    ADD COLUMN clicks_served   bigint      NOT NULL DEFAULT 0;

ALTER TABLE shortener_links
    ADD CONSTRAINT shortener_links_redirect_status CHECK (redirect_status IN (0, 301, 302, 307, 308)) NOT VALID,
    ADD CONSTRAINT shortener_links_valid_from CHECK (valid_from < expires_at) NOT VALID,
    ADD CONSTRAINT shortener_links_max_clicks CHECK (max_clicks BETWEEN 0 AND 1000000000000) NOT VALID,
    ADD CONSTRAINT shortener_links_clicks_served CHECK (clicks_served >= 0) NOT VALID;
