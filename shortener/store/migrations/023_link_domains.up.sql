-- Link domains (issue 37): host names under which the handler answers
-- codes of their own. A domain's links stay in shortener_links, keyed
-- host/code (link.DomainKey). COLLATE "C": hosts compare and list byte by
-- byte, as the embedded store's bucket does. root_redirect and
-- not_found_redirect are '' for the handler's own; the app site
-- association files are NULL for none; keys are the fingerprints of the
-- API keys scoped to the domain.
CREATE TABLE shortener_domains (
    host                       text COLLATE "C" PRIMARY KEY,
    root_redirect              text        NOT NULL DEFAULT '',
    not_found_redirect         text        NOT NULL DEFAULT '',
    apple_app_site_association jsonb,
    assetlinks                 jsonb,
    keys                       text[]      NOT NULL DEFAULT '{}',
    created_at                 timestamptz NOT NULL,
    updated_at                 timestamptz NOT NULL,
    version                    bigint      NOT NULL DEFAULT 1
);
