-- The daily salt of the visitor hash (clicks_salt.go): one random salt per
-- UTC day, shared by every instance on this database. Created race-free
-- (INSERT ... ON CONFLICT DO NOTHING, then read) and deleted once its day
-- has ended: no salt outlives its day.
CREATE TABLE shortener_visitor_salts (
    day  date  PRIMARY KEY,
    salt bytea NOT NULL
);
