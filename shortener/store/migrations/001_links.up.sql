-- Short links and the allocator of sequential IDs.

-- One row per code. COLLATE "C": codes compare byte by byte (case
-- sensitive, independent of the database locale) and index compactly.
-- expires_at and revoked_at are NULL when the link never expires / is live.
CREATE TABLE shortener_links (
    code       text COLLATE "C" PRIMARY KEY,
    long_url   text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    revoked_at timestamptz
);

-- A one-row counter: next_id is the first ID no block has reserved yet.
-- NextBlock advances it by the block size in one UPDATE ... RETURNING (see
-- postgres.go for why this and not a sequence).
CREATE TABLE shortener_id_blocks (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    next_id   bigint  NOT NULL CHECK (next_id >= 1)
);
INSERT INTO shortener_id_blocks (next_id) VALUES (1);
