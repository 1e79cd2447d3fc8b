-- Listing and search of links (GET <api>/links, postgres_list.go).
--
-- q (a case-insensitive substring of the code, long URL or title) is
-- served by a trigram index from the extension pg_trgm, which ships with
-- PostgreSQL's contrib modules; tag by a GIN index on the tag array; the
-- keyset orders created / -created by a B-tree on (created_at, code).
-- Without pg_trgm the migration fails with a message (the error text is
-- what Caddy logs, so it says what to do) naming pg_trgm.
-- Building the indexes reads the table once, which may take longer than
-- the pool's statement_timeout on a large table; CREATE INDEX (not
-- CONCURRENTLY: migrations run in a transaction) holds off writers of
-- shortener_links until it commits.
SET LOCAL statement_timeout = 0;

-- The searched text of a link: code, long URL and title joined by U+0001,
-- which none of them can hold (codes are [A-Za-z0-9_-], URLs are
-- validated, titles refuse control characters), so a match never spans
-- two fields. Queries and the index compare it COLLATE "default": code is
-- COLLATE "C", under which ILIKE folds ASCII letters only.
CREATE FUNCTION shortener_link_search_text(code text, long_url text, title text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT code || chr(1) || long_url || chr(1) || title $$;

DO $$
DECLARE
    ext_schema text;
BEGIN
    SELECT n.nspname INTO ext_schema FROM pg_catalog.pg_extension e
    JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    IF ext_schema IS NULL THEN
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_available_extensions WHERE name = 'pg_trgm') THEN
            RAISE EXCEPTION 'the shortener needs the PostgreSQL extension pg_trgm (link search), and this server does not have it: install PostgreSQL''s contrib modules on the database server (Debian/Ubuntu: apt install postgresql-contrib; RHEL/Fedora: the postgresqlNN-contrib package), then start Caddy again';
        END IF;
        BEGIN
            CREATE EXTENSION pg_trgm;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'the shortener needs the PostgreSQL extension pg_trgm (link search), and this role may not create it: run CREATE EXTENSION pg_trgm; in this database as its owner or a superuser, then start Caddy again';
        END;
        SELECT n.nspname INTO ext_schema FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    END IF;
    EXECUTE format('CREATE INDEX shortener_links_search ON shortener_links
        USING gin ((shortener_link_search_text(code, long_url, title) COLLATE "default") %I.gin_trgm_ops)', ext_schema);
END
$$;

CREATE INDEX shortener_links_tags ON shortener_links USING gin (tags);
CREATE INDEX shortener_links_created ON shortener_links (created_at, code);
-- Revoked links are few: their listing walks this small index instead of
-- filtering the whole creation order.
CREATE INDEX shortener_links_revoked_created ON shortener_links (created_at, code) WHERE revoked_at IS NOT NULL;
