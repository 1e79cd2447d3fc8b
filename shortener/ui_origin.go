package shortener

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"

	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// Requests a dashboard session may make only from the dashboard itself:
// signing in and out, and every write authenticated by the cookie, carry
// an Origin that is the request's own (scheme, host and port compared as
// a browser parses them) and, for writes, the session's CSRF token.
// SameSite=Strict already keeps the cookie off cross-site requests; these
// checks hold where it does not (an old browser, a sibling subdomain
// page, which is same-site).

// csrfHeader carries the session's CSRF token on cookie-authenticated writes.
const csrfHeader = "X-CSRF-Token"

// sameOrigin reports whether r's Origin header names r's own origin.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" || len(r.Header.Values("Origin")) != 1 {
		return false
	}
	u, err := url.Parse(o)
	if err != nil || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if !strings.EqualFold(u.Scheme, scheme) {
		return false
	}
	oh, op, ok1 := originHost(u.Host, scheme)
	rh, rp, ok2 := originHost(r.Host, scheme)
	return ok1 && ok2 && oh == rh && op == rp
}

// originHost parses host[:port] as a browser does: the host serialized
// by the WHATWG host parser, the port with the scheme's default made
// explicit.
func originHost(hostport, scheme string) (host, port string, ok bool) {
	h, p := hostport, ""
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.Contains(hostport[i:], "]") {
		h, p = hostport[:i], hostport[i+1:]
	}
	if p == "" {
		p = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	for _, c := range []byte(p) {
		if c < '0' || c > '9' {
			return "", "", false
		}
	}
	p = strings.TrimLeft(p, "0")
	wh, err := urlpolicy.ParseHost(h)
	if err != nil || p == "" || len(p) > 5 {
		return "", "", false
	}
	return wh.ASCII, p, true
}

// checkOrigin refuses a request whose Origin is not this site (403).
func checkOrigin(r *http.Request) error {
	if !sameOrigin(r) {
		return apiErr(http.StatusForbidden, "cross-origin request refused: Origin must be this site's")
	}
	return nil
}

// checkCSRF is the CSRF check of a cookie-authenticated write: its
// Origin and its token.
func checkCSRF(r *http.Request, token string) error {
	if err := checkOrigin(r); err != nil {
		return err
	}
	got := r.Header.Get(csrfHeader)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
		return apiErr(http.StatusForbidden, "missing or invalid %s header", csrfHeader)
	}
	return nil
}
