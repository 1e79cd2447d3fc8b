-- Destination rules, A/B splits and fallbacks (issue 35): the link's
-- targeting as the handler normalised it (the JSON object
-- {"rules":[...],"variants":[...]}, kept as text so every store reads back
-- the bytes it was given), and where a link that no longer redirects sends
-- a person.
--
-- NULL and '' are "none": PostgreSQL adds the columns without rewriting
-- the table, and links stored before (or by an older version during a
-- rolling upgrade) read back without them. The bounds repeat the API's
-- for other writers; NOT VALID: existing rows hold the defaults.
ALTER TABLE shortener_links
    ADD COLUMN targeting    text,
    ADD COLUMN fallback_url text NOT NULL DEFAULT '';

ALTER TABLE shortener_links
    ADD CONSTRAINT shortener_links_targeting CHECK (octet_length(targeting) <= 65536) NOT VALID,
    ADD CONSTRAINT shortener_links_fallback_url CHECK (octet_length(fallback_url) <= 2048) NOT VALID;
