-- Imported click baselines (import.go): a link brought from another
-- shortener keeps the click total it had there. The baseline sits beside
-- the counted totals so that every all-time total (a link's clicks, the
-- listing sorted by clicks, stats' all_time, the export) is one row's
-- people + bots + imported. The click trigger never touches imported.
SET LOCAL statement_timeout = 0;

ALTER TABLE shortener_link_click_totals ADD COLUMN imported bigint NOT NULL DEFAULT 0;

-- The listing by clicks (postgres_list_clicks.go) orders by the whole
-- all-time total, baseline included.
DROP INDEX shortener_link_click_totals_order;
CREATE INDEX shortener_link_click_totals_order ON shortener_link_click_totals ((people + bots + imported), (code COLLATE "C"));
