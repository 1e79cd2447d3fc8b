-- Bounded click analytics: an all-time total per link that retention never
-- prunes, a count of referrer hosts per link per day that caps them, and
-- indexes that let retention prune old rollups in pages.

-- The backfills below can take longer than the pool's statement_timeout on
-- a large table; the migration's own deadline still bounds them.
SET LOCAL statement_timeout = 0;

-- All clicks ever counted per link. Kept by a trigger on the hourly
-- rollup, in the transaction that writes it: every writer counts it, also
-- an instance of an older version still running during a rolling upgrade.
-- Deleting hourly rows (retention) leaves it alone.
CREATE TABLE shortener_link_click_totals (
    code   text   PRIMARY KEY,
    people bigint NOT NULL DEFAULT 0,
    bots   bigint NOT NULL DEFAULT 0
);

CREATE FUNCTION shortener_link_click_totals_count() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    dp bigint := NEW.people;
    db bigint := NEW.bots;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        dp := NEW.people - OLD.people;
        db := NEW.bots - OLD.bots;
    END IF;
    INSERT INTO shortener_link_click_totals AS t (code, people, bots) VALUES (NEW.code, dp, db)
    ON CONFLICT (code) DO UPDATE SET people = t.people + excluded.people, bots = t.bots + excluded.bots;
    RETURN NULL;
END
$$;

-- Creating the trigger locks out writers of the hourly table until this
-- migration commits, so the backfill that follows sees every row the
-- trigger will not.
CREATE TRIGGER shortener_link_click_totals_count
AFTER INSERT OR UPDATE OF people, bots ON shortener_link_clicks_hourly
FOR EACH ROW EXECUTE FUNCTION shortener_link_click_totals_count();

INSERT INTO shortener_link_click_totals (code, people, bots)
SELECT code, sum(people), sum(bots) FROM shortener_link_clicks_hourly GROUP BY code;

-- Named referrer hosts per link per UTC day. The click transaction locks a
-- day's row before it adds hosts (clicks_postgres.go), so the cap holds
-- whatever number of instances count the same link at once. The row
-- 'other' (hosts past the cap) is not counted.
CREATE TABLE shortener_link_referrer_days (
    code  text    NOT NULL,
    day   date    NOT NULL,
    hosts integer NOT NULL DEFAULT 0,
    PRIMARY KEY (code, day)
);

LOCK TABLE shortener_link_referrers_daily IN SHARE MODE;
INSERT INTO shortener_link_referrer_days (code, day, hosts)
SELECT code, day, count(*) FILTER (WHERE host <> 'other')
FROM shortener_link_referrers_daily GROUP BY code, day;

-- Retention deletes by date, a page at a time.
CREATE INDEX shortener_link_clicks_hourly_hour ON shortener_link_clicks_hourly (hour);
CREATE INDEX shortener_link_referrers_daily_day ON shortener_link_referrers_daily (day);
CREATE INDEX shortener_link_referrer_days_day ON shortener_link_referrer_days (day);
