-- The outbox of link events (webhooks): a row per change of a link,
-- written by the statement or transaction that makes the change, while a
-- handler with webhooks runs. data is the link's row as the change left
-- it (to_jsonb). tx is the writing transaction's id: readers take only
-- rows whose tx is below every transaction still running
-- (pg_snapshot_xmin), in (tx, seq) order, so a row that commits late is
-- never placed behind a reader's cursor (seq alone would be: numbers
-- are taken at insert, visibility comes at commit).
CREATE TABLE shortener_events (
    tx   xid8        NOT NULL DEFAULT pg_current_xact_id(),
    seq  bigint      GENERATED ALWAYS AS IDENTITY,
    id   text        NOT NULL DEFAULT 'evt_' || replace(gen_random_uuid()::text, '-', ''),
    type text        NOT NULL,
    at   timestamptz NOT NULL DEFAULT now(),
    code text        COLLATE "C" NOT NULL,
    data jsonb       NOT NULL,
    PRIMARY KEY (tx, seq)
);
-- Retention prunes by age.
CREATE INDEX shortener_events_at ON shortener_events (at);
