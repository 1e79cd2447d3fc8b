-- A tag's links in creation order (GET <api>/links?tag=, postgres_list.go).
--
-- The GIN index on tags (006) finds a tag's links but not in order: a page
-- of a tag then costs either reading and sorting all its links or walking
-- the creation order of all links past those without it (tens of
-- thousands of rows for a tag on 1 link in 500). One row per (tag, link)
-- here, kept by a trigger in the writer's transaction, serves a tag's page
-- from the primary key: its links newest (or oldest) first from the
-- cursor, about as many rows as the page holds.
--
-- created_at is copied because it orders the keyset; no statement changes
-- a link's created_at (the trigger would not follow it).
SET LOCAL statement_timeout = 0;

CREATE TABLE shortener_link_tags (
    tag        text COLLATE "C" NOT NULL,
    created_at timestamptz      NOT NULL,
    code       text COLLATE "C" NOT NULL,
    PRIMARY KEY (tag, created_at, code)
);

CREATE FUNCTION shortener_link_tags_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM shortener_link_tags g
        WHERE g.tag = ANY (OLD.tags) AND g.created_at = OLD.created_at AND g.code = OLD.code
          AND (TG_OP = 'DELETE' OR NOT g.tag = ANY (NEW.tags));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO shortener_link_tags (tag, created_at, code)
        SELECT DISTINCT t, NEW.created_at, NEW.code FROM unnest(NEW.tags) AS t
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER shortener_link_tags_sync
AFTER INSERT OR DELETE OR UPDATE OF tags ON shortener_links
FOR EACH ROW EXECUTE FUNCTION shortener_link_tags_sync();

INSERT INTO shortener_link_tags (tag, created_at, code)
SELECT DISTINCT t, l.created_at, l.code FROM shortener_links l, unnest(l.tags) AS t;
