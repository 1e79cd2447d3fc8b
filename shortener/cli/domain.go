package cli

import (
	"encoding/json"
	"net/url"
	"time"
)

// The domains API's wire shape, as shortener/domainapi writes it. It is
// written here again because the CLI imports nothing of the server but
// shortener/link; domain_wire_test.go checks that every field the server
// sends is read back whole, and that the bounds are the server's.

// Domain is a link domain as the API answers it (GET <api>/domains/<host>).
type Domain struct {
	Host                    string          `json:"host"`
	RootRedirect            *string         `json:"root_redirect"`
	NotFoundRedirect        *string         `json:"not_found_redirect"`
	AppleAppSiteAssociation json.RawMessage `json:"apple_app_site_association"`
	Assetlinks              json.RawMessage `json:"assetlinks"`
	Keys                    []string        `json:"keys"`
	CreatedAt               time.Time       `json:"created_at"`
	UpdatedAt               time.Time       `json:"updated_at"`
	Version                 int64           `json:"version"`
}

// Bounds the API sets on a domain (shortener/domainapi's), checked here
// only to spare a request: the API judges every value.
const (
	maxAppLinksFile = 64 << 10 // an app site association file, compacted
	maxDomainKeys   = 100      // API key fingerprints of one domain
)

// domainPath is the path of one domain's resource (the host
// path-escaped).
func domainPath(host string) string {
	return "/domains/" + url.PathEscape(host)
}
