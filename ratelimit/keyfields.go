package ratelimit

import (
	"errors"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// One request, one key. Caddy's replacer joins the values of a header or
// query parameter sent several times with "," and takes the first of
// several cookies of one name, while a backend may read another of them:
// `X-API-Key: k1` plus `X-API-Key: junk` would be counted under the key
// "k1,junk", a fresh quota, and authenticated as k1. So a request that
// carries a field the zone's key, plan key or hash tag reads more than
// once is refused with 400, nothing charged, whatever the order of the
// values. One header line holding a comma-separated list is one opaque
// value: the whole line is the key (a backend must not split it either).
// Only what the templates read directly is checked: a `map` or variable
// derived from a header sees the joined value.

// fieldKind is the kind of request field a client may send more than once.
type fieldKind uint8

const (
	fieldHeader fieldKind = iota // {http.request.header.<name>}
	fieldCookie                  // {http.request.cookie.<name>}
	fieldQuery                   // {http.request.uri.query.<name>}
)

// Placeholder prefixes of the fields, as Caddy's replacer names them.
const (
	reqCookiePrefix = "http.request.cookie."
	reqQueryPrefix  = "http.request.uri.query."
)

// field is one request field a template reads.
type field struct {
	kind fieldKind
	name string // canonical header name, cookie name or query parameter
	err  error  // the request's error when it is sent twice (names the field, never a value)
}

// appendFields appends to fs the fields template tmpl reads that are not
// in fs yet, finding placeholders as Caddy's replacer does.
func appendFields(fs []field, tmpl string) []field {
scan:
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] != '{' || i > 0 && tmpl[i-1] == '\\' {
			continue
		}
		end := strings.IndexByte(tmpl[i:], '}') + i
		if end < i {
			continue
		}
		for end < len(tmpl)-1 && tmpl[end-1] == '\\' { // an escaped '}'
			next := strings.IndexByte(tmpl[end+1:], '}')
			if next < 0 {
				continue scan // unclosed: not a placeholder
			}
			end += next + 1
		}
		if f, ok := fieldOf(tmpl[i+1 : end]); ok && !hasField(fs, f) {
			fs = append(fs, f)
		}
		i = end
	}
	return fs
}

// fieldOf is the request field placeholder key reads, if any.
func fieldOf(key string) (field, bool) {
	var f field
	var desc string
	if name, ok := strings.CutPrefix(key, reqHeaderPrefix); ok && name != "" {
		f = field{kind: fieldHeader, name: textproto.CanonicalMIMEHeaderKey(name)}
		desc = "header " + f.name
	} else if name, ok := strings.CutPrefix(key, reqCookiePrefix); ok && name != "" {
		f = field{kind: fieldCookie, name: name}
		desc = "cookie " + name
	} else if name, ok := strings.CutPrefix(key, reqQueryPrefix); ok && name != "" {
		f = field{kind: fieldQuery, name: name}
		desc = "query parameter " + name
	} else {
		return f, false
	}
	f.err = errors.New("rate limit: " + desc + " sent more than once: it names the key")
	return f, true
}

func hasField(fs []field, f field) bool {
	for _, g := range fs {
		if g.kind == f.kind && g.name == f.name {
			return true
		}
	}
	return false
}

// repeatedField returns the first of fs that r carries more than once, or
// nil. It allocates nothing unless a query parameter name is escaped.
func repeatedField(fs []field, r *http.Request) *field {
	for i := range fs {
		f := &fs[i]
		var n int
		switch f.kind {
		case fieldHeader:
			n = len(r.Header[f.name])
		case fieldCookie:
			n = countCookies(r.Header["Cookie"], f.name)
		case fieldQuery:
			n = countQuery(r.URL.RawQuery, f.name)
		}
		if n > 1 {
			return f
		}
	}
	return nil
}

// countCookies counts the cookies named name (case-insensitively, as
// Caddy's replacer matches them) in the Cookie header lines, up to 2. A
// pair Go's parser would skip is counted too: refusing more is safe.
func countCookies(lines []string, name string) int {
	n := 0
	for _, line := range lines {
		for line != "" && n < 2 {
			var part string
			part, line, _ = strings.Cut(line, ";")
			k, _, _ := strings.Cut(part, "=")
			if strings.EqualFold(textproto.TrimString(k), name) {
				n++
			}
		}
	}
	return n
}

// countQuery counts the parameters named name in a raw query, up to 2,
// decoding names as url.ParseQuery does (pairs holding ';' or a bad
// escape are skipped, as it skips them).
func countQuery(raw, name string) int {
	n := 0
	for raw != "" && n < 2 {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(k, "%+") {
			var err error
			if k, err = url.QueryUnescape(k); err != nil {
				continue
			}
		}
		if k == name && validEscapes(v) {
			n++
		}
	}
	return n
}

// validEscapes reports whether every '%' in s starts an escape
// url.QueryUnescape accepts (two hex digits), without decoding.
func validEscapes(s string) bool {
	for i := strings.IndexByte(s, '%'); i >= 0; i = strings.IndexByte(s, '%') {
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return false
		}
		s = s[i+3:]
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
