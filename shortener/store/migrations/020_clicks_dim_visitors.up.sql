-- Unique visitors per rule and variant (clicks.UniqueDims): per link, UTC
-- day, dimension and value, the HyperLogLog sketch of the visitor hashes
-- of the people counted under the value in shortener_link_dims_daily
-- (values past the cap under 'other', as their clicks). Written by the
-- click transaction with its batch (so exactly once), under the lock of
-- the day's shortener_link_dim_days row, and kept for clicks_retention.
CREATE TABLE shortener_link_dim_visitors (
    code     text  NOT NULL,
    dim      text  NOT NULL,
    day      date  NOT NULL,
    value    text  NOT NULL,
    visitors bytea NOT NULL,
    PRIMARY KEY (code, dim, day, value)
);

-- Retention deletes by date, a page at a time.
CREATE INDEX shortener_link_dim_visitors_day ON shortener_link_dim_visitors (day);
