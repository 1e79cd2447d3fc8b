-- Click counters of short links, written by the click pipeline (clicks.go).
-- No foreign key to the links table: counting must not depend on it.

-- People and bots per link per UTC hour.
CREATE TABLE IF NOT EXISTS shortener_link_clicks_hourly (
    code   text        NOT NULL,
    hour   timestamptz NOT NULL,
    people bigint      NOT NULL DEFAULT 0,
    bots   bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (code, hour)
);

-- Clicks per referrer host per link per UTC day.
CREATE TABLE IF NOT EXISTS shortener_link_referrers_daily (
    code  text   NOT NULL,
    day   date   NOT NULL,
    host  text   NOT NULL,
    count bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (code, day, host)
);

-- Click batches already counted: a batch replayed after a crash (or sent
-- twice after a lost reply) is skipped. Pruned after a week.
CREATE TABLE IF NOT EXISTS shortener_click_batches (
    id         text        PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS shortener_click_batches_applied_at ON shortener_click_batches (applied_at);
