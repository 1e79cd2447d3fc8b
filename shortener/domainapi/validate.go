package domainapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// Bounds of a domain's fields.
const (
	MaxAppLinksFile = 64 << 10 // each app site association file
	MaxKeys         = 100      // API keys scoped to one domain
	MaxRedirect     = 2048     // a redirect URL's bytes
)

func bad(format string, args ...any) error { return errorf(http.StatusBadRequest, format, args...) }

// judgeHost reads a new domain's host: a link domain name, within the
// zones when there are any.
func (a *API) judgeHost(raw string) (string, error) {
	if raw == "" {
		return "", bad("host: required")
	}
	host, err := urlpolicy.LinkDomain(raw)
	if err != nil {
		return "", bad("host: %v", err)
	}
	if len(a.Zones) > 0 && !slices.ContainsFunc(a.Zones, func(z string) bool { return host == z || strings.HasSuffix(host, "."+z) }) {
		return "", bad("host: %s is not in the handler's zones (%s)", host, strings.Join(a.Zones, ", "))
	}
	return host, nil
}

// judge checks every field of d but its host, normalising redirects.
func (a *API) judge(d *link.Domain) error {
	for _, f := range []struct {
		name string
		v    *string
	}{{"root_redirect", &d.RootRedirect}, {"not_found_redirect", &d.NotFoundRedirect}} {
		if *f.v == "" {
			continue
		}
		if len(*f.v) > MaxRedirect {
			return bad("%s: over %d bytes", f.name, MaxRedirect)
		}
		u, err := a.CheckURL(*f.v)
		if err != nil {
			return bad("%s: %v", f.name, err)
		}
		*f.v = u
	}
	for _, f := range []struct {
		name string
		v    *json.RawMessage
	}{{"apple_app_site_association", &d.AppleAppSiteAssociation}, {"assetlinks", &d.Assetlinks}} {
		if err := judgeAppLinks(f.name, f.v); err != nil {
			return err
		}
	}
	return judgeKeys(d)
}

// judgeAppLinks: an app site association file is a JSON object or array
// of at most MaxAppLinksFile bytes, kept compact; null is none.
func judgeAppLinks(name string, v *json.RawMessage) error {
	if len(*v) == 0 || string(*v) == "null" {
		*v = nil
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, *v); err != nil {
		return bad("%s: not JSON: %v", name, err)
	}
	if c := buf.Bytes()[0]; c != '{' && c != '[' {
		return bad("%s: must be a JSON object or array", name)
	}
	if buf.Len() > MaxAppLinksFile {
		return bad("%s: over %d bytes", name, MaxAppLinksFile)
	}
	*v = bytes.Clone(buf.Bytes())
	return nil
}

// judgeKeys: keys are API key fingerprints (16 lower-case hex digits, the
// first 8 bytes of the key's SHA-256), at most MaxKeys, kept sorted and
// once each.
func judgeKeys(d *link.Domain) error {
	if len(d.Keys) > MaxKeys {
		return bad("keys: more than %d", MaxKeys)
	}
	for i, k := range d.Keys {
		if !fingerprint(k) {
			return bad("keys[%d]: %q is not an API key fingerprint (16 lower-case hex digits: printf %%s \"$KEY\" | sha256sum | cut -c1-16)", i, k)
		}
	}
	slices.Sort(d.Keys)
	d.Keys = slices.Compact(d.Keys)
	if len(d.Keys) == 0 {
		d.Keys = nil
	}
	return nil
}

func fingerprint(k string) bool {
	if len(k) != 16 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// decode reads a JSON object body into v, naming what is wrong.
func decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bad("body: %v", fmt.Errorf("%w", err))
	}
	if dec.More() {
		return bad("body: more than one JSON value")
	}
	return nil
}
