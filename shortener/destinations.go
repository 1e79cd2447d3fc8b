package shortener

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/targeting"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
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

	// Where an unknown or invalid code sends visitors: a 302 to this
	// absolute URL instead of a 404 (which handle_errors could shape).
	// Checked at load by the handler's URL policy (allow_schemes,
	// deny_hosts, deny_private). Default: none, a 404.
	NotFoundRedirect string `json:"not_found_redirect,omitempty"`

	// Where a GET or HEAD of the bare site path `/` goes: a 302 to this
	// absolute URL, checked as not_found_redirect. Default: none, the
	// request goes on to the next handler.
	RootRedirect string `json:"root_redirect,omitempty"`

	// The app site association files the handler serves, before any code
	// lookup, as `application/json` to GET and HEAD: Apple's
	// `/.well-known/apple-app-site-association` and Android's
	// `/.well-known/assetlinks.json`. Default: none.
	AppLinks *AppLinks `json:"app_links,omitempty"`

	wellKnown  map[string][]byte // path → app_links file
	uaDims     func(ua string) (device, os, browser string, class clicks.UAClass)
	geo        *clicks.GeoIP   // the clicks pipeline's GeoIP; nil: none
	visitorKey [2]uint64       // SipHash key of targeting.Visitor.Key
	memo       *targeting.Memo // the rules recent visitors got, for every link's set
}

// AppLinks are the app site association files: each given inline (a JSON
// value) or as a file read at load, valid JSON of at most 64 KiB; one of
// the two per file.
type AppLinks struct {
	// apple-app-site-association's JSON.
	AppleAppSiteAssociation json.RawMessage `json:"apple_app_site_association,omitempty"`
	// The path of a file holding apple-app-site-association's JSON.
	AppleAppSiteAssociationFile string `json:"apple_app_site_association_file,omitempty"`
	// assetlinks.json's JSON.
	Assetlinks json.RawMessage `json:"assetlinks,omitempty"`
	// The path of a file holding assetlinks.json's JSON.
	AssetlinksFile string `json:"assetlinks_file,omitempty"`
}

// maxAppLinksFile bounds an app site association file.
const maxAppLinksFile = 64 << 10

// Where the app_links files are served.
const (
	pathAASA       = "/.well-known/apple-app-site-association"
	pathAssetlinks = "/.well-known/assetlinks.json"
)

// neverAppSchemes are schemes no app_url may use, listed or not.
var neverAppSchemes = []string{"http", "https", "javascript", "data", "vbscript", "file", "blob", "about"}

// unmarshalAppSchemes reads `app_schemes <scheme...>`.
func (r *reading) unmarshalAppSchemes(d *caddyfile.Dispenser) (err error) {
	r.AppSchemes, err = cfparse.Args(d)
	return err
}

// unmarshalNotFoundRedirect reads `not_found_redirect <url>`.
func (r *reading) unmarshalNotFoundRedirect(d *caddyfile.Dispenser) (err error) {
	r.NotFoundRedirect, err = cfparse.OneArg(d)
	return err
}

// unmarshalRootRedirect reads `root_redirect <url>`.
func (r *reading) unmarshalRootRedirect(d *caddyfile.Dispenser) (err error) {
	r.RootRedirect, err = cfparse.OneArg(d)
	return err
}

// unmarshalAppLinks reads `app_links { apple_app_site_association <file>; assetlinks <file> }`.
func (r *reading) unmarshalAppLinks(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	if r.AppLinks == nil {
		r.AppLinks = &AppLinks{}
	}
	return appLinksBlock.Parse(d, r)
}

var appLinksBlock = cfparse.Block[reading]{
	Kind: "app_links setting",
	Hint: " (want apple_app_site_association or assetlinks)",
	Subdirectives: cfparse.Table[reading]{
		"apple_app_site_association": func(r *reading, d *caddyfile.Dispenser) (err error) {
			r.pos["app_links.apple_app_site_association"] = cfparse.PosOf(d)
			r.AppLinks.AppleAppSiteAssociationFile, err = cfparse.OneArg(d)
			return err
		},
		"assetlinks": func(r *reading, d *caddyfile.Dispenser) (err error) {
			r.pos["app_links.assetlinks"] = cfparse.PosOf(d)
			r.AppLinks.AssetlinksFile, err = cfparse.OneArg(d)
			return err
		},
	},
}

// validateDestinations judges the destination settings.
func (h *Handler) validateDestinations(pos positions) error {
	if err := h.validateRedirectSettings(pos); err != nil {
		return err
	}
	if a := h.AppLinks; a != nil {
		if err := checkAppLinksFile("apple_app_site_association", a.AppleAppSiteAssociation, a.AppleAppSiteAssociationFile); err != nil {
			return pos.at("app_links.apple_app_site_association", err)
		}
		if err := checkAppLinksFile("assetlinks", a.Assetlinks, a.AssetlinksFile); err != nil {
			return pos.at("app_links.assetlinks", err)
		}
	}
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

// validateRedirectSettings judges not_found_redirect and root_redirect by
// the handler's URL policy; a loop back to this handler cannot be told
// from the configuration, so none is looked for.
func (h *Handler) validateRedirectSettings(pos positions) error {
	schemes := h.AllowSchemes
	if len(schemes) == 0 {
		schemes = []string{"http", "https"}
	}
	policy, err := urlpolicy.New(schemes, h.DenyHosts, h.denyPrivate())
	if err != nil {
		return nil // validateTargets names the bad entry
	}
	for _, f := range []struct{ name, url string }{{"not_found_redirect", h.NotFoundRedirect}, {"root_redirect", h.RootRedirect}} {
		if f.url == "" {
			continue
		}
		if _, err := policy.Check(f.url); err != nil {
			return pos.at(f.name, fmt.Errorf("invalid %s %q: %s", f.name, f.url, strings.TrimPrefix(err.Error(), "long_url ")))
		}
	}
	return nil
}

// checkAppLinksFile judges one app_links file as configured: inline JSON
// or a path, not both; inline JSON must be valid and within the bound.
func checkAppLinksFile(name string, inline json.RawMessage, file string) error {
	if len(inline) > 0 && file != "" {
		return fmt.Errorf("%s is given both inline and as %s_file", name, name)
	}
	if len(inline) > 0 {
		return checkAppLinksJSON(name, inline)
	}
	return nil
}

func checkAppLinksJSON(name string, b []byte) error {
	if len(b) > maxAppLinksFile {
		return fmt.Errorf("%s is %d bytes, at most %d are allowed", name, len(b), maxAppLinksFile)
	}
	if !json.Valid(b) {
		return fmt.Errorf("%s is not valid JSON", name)
	}
	return nil
}

// loadAppLinks reads the app_links files (Provision).
func (h *Handler) loadAppLinks() error {
	a := h.AppLinks
	if a == nil {
		return nil
	}
	h.wellKnown = map[string][]byte{}
	for _, f := range []struct {
		name, path, file string
		inline           []byte
	}{
		{"apple_app_site_association", pathAASA, a.AppleAppSiteAssociationFile, a.AppleAppSiteAssociation},
		{"assetlinks", pathAssetlinks, a.AssetlinksFile, a.Assetlinks},
	} {
		b := f.inline
		if f.file != "" {
			var err error
			if b, err = readAppLinksFile(f.file); err != nil {
				return fmt.Errorf("shortener: app_links %s: %w", f.name, err)
			}
			if err := checkAppLinksJSON(f.file, b); err != nil {
				return fmt.Errorf("shortener: app_links %s: %w", f.name, err)
			}
		}
		if len(b) > 0 {
			h.wellKnown[f.path] = b
		}
	}
	return nil
}

// readAppLinksFile reads at most one byte past the bound, so that a
// larger file is refused without being read whole.
func readAppLinksFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxAppLinksFile+1))
}

// provisionDestinations readies what a redirect of a link with targeting
// needs (Provision, last): the app_links files, how loaded targeting is
// read, the user-agent parser and GeoIP file of the clicks pipeline (a
// parser of its own, made on first use, when clicks are off), and the key
// of visitor keys.
func (h *Handler) provisionDestinations(ctx context.Context) error {
	if err := h.loadAppLinks(); err != nil {
		return err
	}
	// Judged when saved: any URL the stores hold is read as it is, and
	// app_url schemes are this configuration's.
	h.memo = targeting.NewMemo()
	h.cache.targeting = targeting.Options{AppSchemes: append(slices.Clone(h.AppSchemes), "http", "https"), GeoIP: true}
	if h.clicks != nil {
		h.uaDims, h.geo = h.clicks.Ua.Dims, h.clicks.Geo
	} else {
		ua := sync.OnceValue(clicks.NewUAParser)
		h.uaDims = func(s string) (string, string, string, clicks.UAClass) { return ua().Dims(s) }
	}
	secret, err := h.visitorSecret(ctx)
	if err != nil {
		// Not fatal: configurations that use no split worked before
		// splits existed. This instance's splits hold until it restarts.
		h.logger.Warn("no shared secret for A/B visitor keys; this instance uses one of its own", zap.Error(err))
		secret = make([]byte, 32)
		_, _ = rand.Read(secret) // never fails (crypto/rand panics rather)
	}
	sum := sha256.Sum256(append([]byte("edgekit shortener visitor key\x00"), secret...))
	h.visitorKey = [2]uint64{binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])}
	return nil
}

// visitorSecret is the secret visitor keys are derived from, the same on
// every instance: with Redis, a random value kept at
// <prefix>:visitor_secret (the first instance to write it wins, SET NX,
// and it never expires); without Redis, or when Redis does not answer at
// start, the secret generated in Caddy's data directory (ui_secret.go),
// which instances share when they share that directory.
func (h *Handler) visitorSecret(ctx context.Context) ([]byte, error) {
	if h.rdb != nil {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		key := h.cache.prefix + ":visitor_secret"
		fresh := make([]byte, 32)
		_, _ = rand.Read(fresh) // never fails (crypto/rand panics rather)
		h.rdb.SetNX(ctx, key, hex.EncodeToString(fresh), 0)
		v, err := h.rdb.Get(ctx, key).Result()
		if err == nil && len(v) >= 32 {
			return []byte(v), nil
		}
		h.logger.Warn("redis did not give the shared visitor secret; A/B splits use the one in Caddy's data directory", zap.Error(err))
	}
	secret, _, err := dataDirSecret(cmp.Or(h.dataDir, caddy.AppDataDir()))
	return secret, err
}
