-- Link metadata for people (issue 15): a title, tags and notes. Redirects
-- never read them.
--
-- Constant defaults: PostgreSQL adds the columns without rewriting the
-- table, and links stored before this migration (or inserted by an older
-- version during a rolling upgrade) read back with none. The bounds are
-- checked by the API and the store (metadata.go); the constraints repeat
-- the lengths for other writers. NOT VALID: existing rows hold the
-- defaults, so the table need not be scanned to prove it.
ALTER TABLE shortener_links
    ADD COLUMN title text   NOT NULL DEFAULT '',
    ADD COLUMN tags  text[] NOT NULL DEFAULT '{}',
    ADD COLUMN notes text   NOT NULL DEFAULT '';

ALTER TABLE shortener_links
    ADD CONSTRAINT shortener_links_title_len CHECK (char_length(title) <= 200) NOT VALID,
    ADD CONSTRAINT shortener_links_tags_len  CHECK (cardinality(tags) <= 20) NOT VALID,
    ADD CONSTRAINT shortener_links_notes_len CHECK (char_length(notes) <= 2000) NOT VALID;
