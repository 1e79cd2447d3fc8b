-- Daily click rollups and unique-visitor sketches (clicks_retention.go,
-- clicks_postgres_uniques.go).
--
-- A link's day: the people and bots of the hourly rows the retention
-- rolled up (hourly rows older than clicks_hourly_retention move here, in
-- the statement that deletes them, so a click is counted in exactly one of
-- the two tables), and the HyperLogLog sketch of the day's visitor hashes,
-- merged by the click transaction. Kept for clicks_retention.
CREATE TABLE shortener_link_clicks_daily (
    code     text   NOT NULL,
    day      date   NOT NULL,
    people   bigint NOT NULL DEFAULT 0,
    bots     bigint NOT NULL DEFAULT 0,
    visitors bytea,
    PRIMARY KEY (code, day)
);

-- Retention deletes by date, a page at a time.
CREATE INDEX shortener_link_clicks_daily_day ON shortener_link_clicks_daily (day);
