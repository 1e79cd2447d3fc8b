package shortener

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/shortener/link"
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
			if err != nil { // "rules[0].url: host 'x' is not allowed"
				return errors.New(strings.TrimPrefix(err.Error(), "long_url "))
			}
			return nil
		},
		AppSchemes: h.AppSchemes,
		GeoIP:      h.ClicksGeoIP != "",
	}
}

// judgeTargeting judges the rules, variants and fallback_url of a create
// or an import for r and sets them on l; a refusal names its field
// ("rules[0].if.country[1]", "variants", "fallback_url").
func (h *Handler) judgeTargeting(r *http.Request, req link.TargetingRequest, l *link.Link) (field string, err error) {
	if req.FallbackURL != "" {
		if l.FallbackURL, err = h.judgeFallback(r, req.FallbackURL); err != nil {
			return "fallback_url", err
		}
	}
	l.Targeting, err = h.compileTargeting(r, req.Rules, req.Variants)
	return targetingField(err), err
}

// judgeFallback judges a fallback URL as a long URL is judged.
func (h *Handler) judgeFallback(r *http.Request, raw string) (string, error) {
	u, err := h.policy.Check(raw, h.selfHosts(r)...)
	if err != nil {
		return "", errors.New("fallback_url " + strings.TrimPrefix(err.Error(), "long_url "))
	}
	return u, nil
}

// compileTargeting judges a link's rules and variants (each absent when
// empty or null) and returns them normalised as Link.Targeting keeps
// them: nil for none.
func (h *Handler) compileTargeting(r *http.Request, rules, variants json.RawMessage) ([]byte, error) {
	part := func(raw json.RawMessage) json.RawMessage {
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		return raw
	}
	in, err := json.Marshal(targetingJSON{Rules: part(rules), Variants: part(variants)})
	if err != nil { // a RawMessage that is not JSON: strictjson decoded it, so never
		return nil, &targeting.FieldError{Field: "rules", Msg: err.Error()}
	}
	set, err := targeting.Parse(in, h.targetingOptions(r))
	if err != nil || set == nil {
		return nil, err
	}
	return json.Marshal(struct {
		Rules    []targeting.Rule    `json:"rules,omitempty"`
		Variants []targeting.Variant `json:"variants,omitempty"`
	}{set.Rules(), set.Variants()})
}

// targetingJSON is the object targeting.Parse reads.
type targetingJSON struct {
	Rules    json.RawMessage `json:"rules,omitempty"`
	Variants json.RawMessage `json:"variants,omitempty"`
}

// targetingField is the field a compileTargeting error names: the JSON
// path of a *targeting.FieldError, "rules" for the set as a whole.
func targetingField(err error) string {
	var fe *targeting.FieldError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &fe) && fe.Field != "":
		return fe.Field
	}
	return "rules"
}

// targetingMessage is a targeting refusal as the API words it: the field
// first ("rules[0].url: host 'x' is not allowed").
func targetingMessage(field string, err error) string {
	msg := err.Error()
	if field == "" || strings.HasPrefix(msg, field) {
		return msg
	}
	return field + ": " + msg
}
