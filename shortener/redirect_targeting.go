package shortener

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"html"
	"math/bits"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/targeting"
)

// serveGet answers a GET or HEAD outside the API and the UI: an app_links
// file, the bare site path (root_redirect), or a code's redirect. Other
// methods, and paths ending in '/', go on to next.
func (h *Handler) serveGet(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return next.ServeHTTP(w, r)
	}
	path := r.URL.Path
	dom := h.domainOf(r)
	if strings.HasPrefix(path, "/.well-known/") {
		if b := h.wellKnownOf(dom, path); b != nil {
			return serveWellKnown(w, r, b)
		}
	}
	code, ok := codeOf(path)
	if !ok {
		root := h.RootRedirect
		if dom != nil && dom.RootRedirect != "" {
			root = dom.RootRedirect
		}
		if path == "/" && root != "" {
			return h.redirectTo(w, root)
		}
		return next.ServeHTTP(w, r)
	}
	if dom != nil {
		return h.serveRedirect(w, r, code, link.DomainKey(dom.Host, code))
	}
	return h.serveRedirect(w, r, code, code)
}

// wellKnownOf is the app_links file at path: the link domain's own, else
// the handler's; nil for none.
func (h *Handler) wellKnownOf(dom *link.Domain, path string) []byte {
	if dom != nil {
		switch {
		case path == pathAASA && dom.AppleAppSiteAssociation != nil:
			return dom.AppleAppSiteAssociation
		case path == pathAssetlinks && dom.Assetlinks != nil:
			return dom.Assetlinks
		}
	}
	return h.wellKnown[path]
}

// serveWellKnown writes an app_links file.
func serveWellKnown(w http.ResponseWriter, r *http.Request, b []byte) error {
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(b)))
	hdr.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
	return nil
}

// redirectTo answers a 302 to a configured or fallback URL: the request's
// query is not forwarded.
func (h *Handler) redirectTo(w http.ResponseWriter, location string) error {
	hdr := w.Header()
	hdr["Location"] = []string{location}
	hdr["Cache-Control"] = []string{h.cacheControl}
	hdr["X-Robots-Tag"] = []string{"noindex"}
	w.WriteHeader(http.StatusFound)
	return nil
}

// failTo answers a link that does not serve: a redirect to fallback when
// there is one, else status (fail).
func (h *Handler) failTo(w http.ResponseWriter, r *http.Request, fallback string, status int, err error) error {
	if fallback != "" {
		return h.redirectTo(w, fallback)
	}
	return h.fail(w, r, status, err)
}

// notFound answers an unknown or invalid code: not_found_redirect, else
// a 404.
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request, err error) error {
	if dom := h.domainOf(r); dom != nil && dom.NotFoundRedirect != "" {
		return h.failTo(w, r, dom.NotFoundRedirect, http.StatusNotFound, err)
	}
	return h.failTo(w, r, h.NotFoundRedirect, http.StatusNotFound, err)
}

// targeted is what target decided for one visit.
type targeted struct {
	location string // the destination: a rule's or variant's URL, an http(s) app_url, else the link's
	app      string // a custom-scheme app_url the page opens (writeAppPage)
	rule     string // the names of the rule and variant chosen, for the click
	variant  string
	class    clicks.UAClass // the user agent's, when classKnown
	// classKnown: a user-agent condition classified the User-Agent, so
	// the click need not again.
	classKnown bool
}

// target decides where a link with targeting sends this visit; addr is
// the client's address.
func (h *Handler) target(w http.ResponseWriter, r *http.Request, code string, e *entry, addr netip.Addr, now time.Time) targeted {
	v, t := h.visitor(r, code, e.set.Needs(), addr, now)
	d := e.set.DecideWith(h.memo, &v)
	t.location, t.rule, t.variant = e.location, d.RuleName, d.VariantName
	if d.URL != "" {
		t.location = d.URL
	}
	if h.SourceHeader {
		hdr := w.Header()
		if d.RuleName != "" {
			hdr["X-Shortener-Rule"] = []string{d.RuleName}
		}
		if d.VariantName != "" {
			hdr["X-Shortener-Variant"] = []string{d.VariantName}
		}
	}
	if d.AppURL == "" {
		return t
	}
	if s, _, _ := strings.Cut(d.AppURL, ":"); strings.EqualFold(s, "http") || strings.EqualFold(s, "https") {
		t.location = d.AppURL
	} else {
		t.app = d.AppURL
	}
	return t
}

// visitor computes what the set needs of this visit, nothing more, and
// the user agent's class when it classified it.
func (h *Handler) visitor(r *http.Request, code string, needs targeting.Needs, addr netip.Addr, now time.Time) (targeting.Visitor, targeted) {
	v := targeting.Visitor{Link: code, Now: now, RawQuery: r.URL.RawQuery}
	var t targeted
	var ua string
	if vs := r.Header["User-Agent"]; len(vs) > 0 {
		ua = vs[0]
	}
	if needs&targeting.NeedUA != 0 && h.uaDims != nil {
		var os string
		v.Device, os, v.Browser, t.class = h.uaDims(ua)
		v.OS, t.classKnown = targetingOS(os), true
	}
	if needs&targeting.NeedLanguage != 0 {
		if vs := r.Header["Accept-Language"]; len(vs) > 0 {
			v.AcceptLanguage = vs[0]
		}
	}
	if needs&(targeting.NeedAddr|targeting.NeedCountry|targeting.NeedVisitor) != 0 {
		v.Addr = addr
	}
	if needs&targeting.NeedCountry != 0 {
		v.Country = h.geo.Country(v.Addr)
	}
	if needs&targeting.NeedVisitor != 0 {
		v.Key = visitorKey(h.visitorKey, v.Addr, ua)
	}
	return v, t
}

// classify makes the click of a redirect: with the class target found
// when a user-agent condition read the User-Agent.
func (h *Handler) classify(r *http.Request, addr netip.Addr, code string, now time.Time, t *targeted) (clicks.Click, bool) {
	if t.classKnown {
		return clicks.ClassifyRequestAs(r, addr, code, now, t.class)
	}
	return clicks.ClassifyRequest(r, addr, code, now)
}

// targetingOS maps the clicks parser's OS names onto the values an os
// condition takes: the systems it names, "other" for the rest.
func targetingOS(os string) string {
	switch os {
	case "ios", "android", "windows", "macos", "linux", "chromeos":
		return os
	}
	return "other"
}

// visitorKey is the A/B key of a visitor: SipHash-2-4, under the key
// every instance shares, of the client address (16 bytes) and the first
// MaxUserAgent bytes of the user agent. The same visitor gets the same
// key on every instance; without the key it cannot be computed.
func visitorKey(k [2]uint64, addr netip.Addr, ua string) uint64 {
	if len(ua) > clicks.MaxUserAgent {
		ua = ua[:clicks.MaxUserAgent]
	}
	var buf [16 + clicks.MaxUserAgent]byte
	a := addr.As16()
	copy(buf[:16], a[:])
	n := 16 + copy(buf[16:], ua)
	return sipHash24(k, buf[:n])
}

// sipHash24 is SipHash-2-4 (Aumasson and Bernstein) of m under key k.
func sipHash24(k [2]uint64, m []byte) uint64 {
	v0, v1 := k[0]^0x736f6d6570736575, k[1]^0x646f72616e646f6d
	v2, v3 := k[0]^0x6c7967656e657261, k[1]^0x7465646279746573
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13) ^ v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16) ^ v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21) ^ v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17) ^ v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	n := len(m)
	for ; len(m) >= 8; m = m[8:] {
		x := binary.LittleEndian.Uint64(m)
		v3 ^= x
		round()
		round()
		v0 ^= x
	}
	var last [8]byte
	copy(last[:], m)
	last[7] = byte(n)
	x := binary.LittleEndian.Uint64(last[:])
	v3 ^= x
	round()
	round()
	v0 ^= x
	v2 ^= 0xff
	for range 4 {
		round()
	}
	return v0 ^ v1 ^ v2 ^ v3
}

// appPageDelay is how long the app page waits for the app before it goes
// to the web fallback.
const appPageDelay = 1500

// writeAppPage answers a custom-scheme app link: a page that opens app
// and, if the app did not take over after appPageDelay ms, goes to web
// (the rule's url: a store or web page); a link to web without script.
// Its only script is inline, allowed by a nonce; nothing is loaded.
func (h *Handler) writeAppPage(w http.ResponseWriter, r *http.Request, app, web string) {
	var nb [16]byte
	_, _ = rand.Read(nb[:]) // never fails (crypto/rand panics rather)
	nonce := base64.RawURLEncoding.EncodeToString(nb[:])
	webAttr := html.EscapeString(web)
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><meta name="robots" content="noindex">`)
	b.WriteString(`<meta name="viewport" content="width=device-width"><title>Opening the app</title>`)
	b.WriteString(`<noscript><meta http-equiv="refresh" content="0;url=` + webAttr + `"></noscript></head><body>`)
	b.WriteString(`<p><a href="` + webAttr + `">Continue</a></p>`)
	b.WriteString(`<script nonce="` + nonce + `">location.replace(` + jsString(app) + `);setTimeout(function(){location.replace(`)
	b.WriteString(jsString(web) + `)},` + strconv.Itoa(appPageDelay) + `);</script></body></html>`)
	body := b.String()
	hdr := w.Header()
	hdr["Content-Type"] = []string{"text/html; charset=utf-8"}
	hdr["Content-Length"] = []string{strconv.Itoa(len(body))}
	hdr["Content-Security-Policy"] = []string{"default-src 'none'; script-src 'nonce-" + nonce + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"}
	hdr["Cache-Control"] = []string{h.cacheControl}
	hdr["X-Robots-Tag"] = []string{"noindex"}
	hdr["X-Content-Type-Options"] = []string{"nosniff"}
	hdr["Referrer-Policy"] = []string{"no-referrer"}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(body))
	}
}

// jsString quotes s as a JavaScript string literal safe inside an HTML
// script element: only letters, digits and a few URL characters stay as
// they are; everything else (quotes, backslash, '<', '>', '&', controls,
// non-ASCII) is a \uXXXX escape.
func jsString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	const hex = "0123456789abcdef"
	for _, c := range s {
		if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(":/?#=.-_~%+,;@!*()$", c)) {
			b.WriteRune(c)
			continue
		}
		for _, u := range utf16Units(c) {
			b.WriteString(`\u`)
			b.WriteByte(hex[u>>12&15])
			b.WriteByte(hex[u>>8&15])
			b.WriteByte(hex[u>>4&15])
			b.WriteByte(hex[u&15])
		}
	}
	b.WriteByte('"')
	return b.String()
}

// utf16Units is c in UTF-16: one unit, or a surrogate pair.
func utf16Units(c rune) []uint16 {
	if c < 0x10000 {
		return []uint16{uint16(c)}
	}
	c -= 0x10000
	return []uint16{uint16(0xd800 + c>>10), uint16(0xdc00 + c&0x3ff)}
}
