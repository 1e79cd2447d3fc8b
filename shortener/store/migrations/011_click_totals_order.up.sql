-- Links by click total (GET <api>/links?sort=-clicks|clicks, postgres_list_clicks.go).
--
-- A page sorted by clicks used to sort every link by its total (1.9 s at
-- 1,000,000 links). The totals in order, ties by code as links compare
-- them (COLLATE "C"), serve the clicked links a page at a time; the links
-- never clicked (no row, or a total of 0) follow (or, ascending, come
-- first) in the order of their primary key. Each total's update now also
-- updates this index (once per code per batch of clicks).
SET LOCAL statement_timeout = 0;

CREATE INDEX shortener_link_click_totals_order ON shortener_link_click_totals ((people + bots), (code COLLATE "C"));
