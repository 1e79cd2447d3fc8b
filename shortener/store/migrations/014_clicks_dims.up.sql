-- Clicks per dimension value (clicks_dims.go): per link, UTC day and
-- dimension (country, region, city, device, os, browser), the clicks of
-- each value, written by the click transaction with its batch (so exactly
-- once) and kept for clicks_retention.
CREATE TABLE shortener_link_dims_daily (
    code  text   NOT NULL,
    dim   text   NOT NULL,
    day   date   NOT NULL,
    value text   NOT NULL,
    count bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (code, dim, day, value)
);

-- Named values per link, day and dimension: the click transaction locks
-- a row before it adds values, so the cap (clicks_referrers) holds across
-- instances, as shortener_link_referrer_days does for referrer hosts. The
-- row 'other' (values past the cap) is not counted.
CREATE TABLE shortener_link_dim_days (
    code   text    NOT NULL,
    day    date    NOT NULL,
    dim    text    NOT NULL,
    "values" integer NOT NULL DEFAULT 0,
    PRIMARY KEY (code, day, dim)
);

-- Breakdowns across links read one dimension over a range of days;
-- retention deletes by date, a page at a time.
CREATE INDEX shortener_link_dims_daily_dim_day ON shortener_link_dims_daily (dim, day);
CREATE INDEX shortener_link_dims_daily_day ON shortener_link_dims_daily (day);
CREATE INDEX shortener_link_dim_days_day ON shortener_link_dim_days (day);
