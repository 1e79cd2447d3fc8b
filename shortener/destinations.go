package shortener

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/shortener/targeting"
)

// destinations are the handler's settings for where visitors go besides a
// link's own destination: per-link rules and A/B splits (a link's `rules`
// and `variants`, judged by shortener/targeting). Embedded in Handler:
// its fields are the handler's.
type destinations struct {
	// Custom URL schemes a rule's `app_url` may use (`myapp`, `fb`): an
	// app link, beside the rule's `url` as its store or web fallback, on a
	// rule for `os` ios or android. RFC 3986 schemes, compared
	// case-insensitively; http and https are not custom, and javascript,
	// data, vbscript, file, blob and about are never allowed. Default:
	// none, so no rule can carry a custom-scheme `app_url`.
	AppSchemes []string `json:"app_schemes,omitempty"`
}

// neverAppSchemes are schemes no app_url may use, listed or not.
var neverAppSchemes = []string{"http", "https", "javascript", "data", "vbscript", "file", "blob", "about"}

// unmarshalAppSchemes reads `app_schemes <scheme...>`.
func (r *reading) unmarshalAppSchemes(d *caddyfile.Dispenser) (err error) {
	r.AppSchemes, err = cfparse.Args(d)
	return err
}

// validateDestinations judges the destination settings.
func (h *Handler) validateDestinations(pos positions) error {
	for _, s := range h.AppSchemes {
		if !validScheme(s) {
			return pos.at("app_schemes", fmt.Errorf("invalid app scheme %q: want a URL scheme (a letter, then letters, digits, + - .)", s))
		}
		if slices.Contains(neverAppSchemes, strings.ToLower(s)) {
			return pos.at("app_schemes", fmt.Errorf("app scheme %q is not allowed: app_schemes lists custom schemes only", s))
		}
	}
	return nil
}

// validScheme reports whether s has RFC 3986's scheme syntax.
func validScheme(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20 // ASCII letters to lower case
		switch {
		case c >= 'a' && c <= 'z':
		case i > 0 && (s[i] >= '0' && s[i] <= '9' || s[i] == '+' || s[i] == '-' || s[i] == '.'):
		default:
			return false
		}
	}
	return true
}

// targetingOptions are what a link's rules and variants are judged by
// when r saves them: the same URL policy as its long URL (schemes,
// private targets, deny_hosts, no loop back to this handler), the custom
// app schemes, and whether countries can be told (clicks_geoip).
func (h *Handler) targetingOptions(r *http.Request) targeting.Options {
	self := h.selfHosts(r)
	return targeting.Options{
		CheckURL: func(raw string) error {
			_, err := h.policy.Check(raw, self...)
			return err
		},
		AppSchemes: h.AppSchemes,
		GeoIP:      h.ClicksGeoIP != "",
	}
}
