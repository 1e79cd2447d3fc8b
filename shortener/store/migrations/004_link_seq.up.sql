-- Creation order of links, for the code filter's delta sync (codefilter.go):
-- every new row takes the next number of shortener_links_seq, also rows
-- that other writers insert straight into the table.
--
-- No table rewrite: the column is added without a default (rows stored
-- before this migration keep NULL and are found by the filter's full
-- listing, which pages by code), then the default is set for new rows.
-- Building the index reads the table once, which may take longer than the
-- pool's statement_timeout on a large table.
SET LOCAL statement_timeout = 0;

CREATE SEQUENCE shortener_links_seq;
ALTER TABLE shortener_links ADD COLUMN seq bigint;
ALTER TABLE shortener_links ALTER COLUMN seq SET DEFAULT nextval('shortener_links_seq');
ALTER SEQUENCE shortener_links_seq OWNED BY shortener_links.seq;

CREATE UNIQUE INDEX shortener_links_seq_key ON shortener_links (seq) WHERE seq IS NOT NULL;
