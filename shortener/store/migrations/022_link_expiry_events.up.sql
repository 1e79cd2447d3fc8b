-- link.expired events (webhooks): links expire by time, so a sweep
-- records them, from a mark kept here (one row per kind of sweep), over
-- the links whose expiry passed since, found through this index.
CREATE TABLE shortener_event_marks (
    name text        PRIMARY KEY,
    at   timestamptz NOT NULL
);
CREATE INDEX shortener_links_expiry ON shortener_links (expires_at) WHERE expires_at IS NOT NULL;
