package domainapi

import (
	"encoding/json"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// DomainRequest is the body of POST <api>/domains: host is required.
type DomainRequest struct {
	Host                    string          `json:"host"`
	RootRedirect            string          `json:"root_redirect,omitempty"`
	NotFoundRedirect        string          `json:"not_found_redirect,omitempty"`
	AppleAppSiteAssociation json.RawMessage `json:"apple_app_site_association,omitempty"`
	Assetlinks              json.RawMessage `json:"assetlinks,omitempty"`
	Keys                    []string        `json:"keys,omitempty"`
}

// DomainResponse is a link domain as the API shows it.
type DomainResponse struct {
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

// ResponseOf is d as the API shows it.
func ResponseOf(d link.Domain) DomainResponse {
	out := DomainResponse{Host: d.Host, RootRedirect: orNull(d.RootRedirect), NotFoundRedirect: orNull(d.NotFoundRedirect),
		AppleAppSiteAssociation: rawOrNull(d.AppleAppSiteAssociation), Assetlinks: rawOrNull(d.Assetlinks),
		Keys: d.Keys, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(), Version: d.Version}
	if out.Keys == nil {
		out.Keys = []string{}
	}
	return out
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
