package shortener

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxLongURL is the longest target URL accepted at creation, in bytes.
const maxLongURL = 2048

// urlPolicy holds the rules a long URL must pass before it becomes a link:
// the checks that keep the short domain from serving as a phishing, XSS or
// redirect-loop tool.
type urlPolicy struct {
	schemes map[string]bool // lower-case
	exact   map[string]bool // denied hosts, lower-case, no trailing dot
	suffix  []string        // denied "*.example.com" entries as ".example.com"
}

func newURLPolicy(allowSchemes, denyHosts []string) urlPolicy {
	p := urlPolicy{schemes: map[string]bool{}, exact: map[string]bool{}}
	for _, s := range allowSchemes {
		p.schemes[strings.ToLower(s)] = true
	}
	for _, h := range denyHosts {
		h = normHost(h)
		if rest, ok := strings.CutPrefix(h, "*."); ok {
			p.suffix = append(p.suffix, "."+rest)
		} else {
			p.exact[h] = true
		}
	}
	return p
}

// normHost lower-cases a host name and drops a trailing dot, so
// "Example.COM." and "example.com" compare equal.
func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// denied reports whether host (normalised) is in deny_hosts: an exact entry,
// or a subdomain of a "*.suffix" entry.
func (p urlPolicy) denied(host string) bool {
	if p.exact[host] {
		return true
	}
	for _, s := range p.suffix {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// check validates raw as a link target. selfHosts are the host names of this
// shortener (the request's host, base_url's host): a link to them would
// redirect to itself. The error says what is wrong, for the API's answer.
func (p urlPolicy) check(raw string, selfHosts ...string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("long_url is required")
	}
	if len(raw) > maxLongURL {
		return nil, fmt.Errorf("long_url is longer than %d bytes", maxLongURL)
	}
	if !utf8.ValidString(raw) {
		return nil, errors.New("long_url is not valid UTF-8")
	}
	for _, r := range raw {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == '\\' {
			return nil, errors.New("long_url contains whitespace, a backslash or a control character")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("long_url is not a valid URL")
	}
	if u.Scheme == "" || !u.IsAbs() {
		return nil, errors.New("long_url must be an absolute URL")
	}
	if !p.schemes[strings.ToLower(u.Scheme)] {
		return nil, fmt.Errorf("long_url scheme '%s' is not allowed", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, errors.New("long_url must have a host")
	}
	if u.User != nil {
		return nil, errors.New("long_url must not contain user information (user:password@)")
	}
	host := normHost(u.Hostname())
	if host == "" || strings.HasPrefix(host, ".") || strings.Contains(host, "..") {
		return nil, errors.New("long_url must have a valid host")
	}
	if p.denied(host) {
		return nil, fmt.Errorf("long_url host '%s' is not allowed", host)
	}
	for _, self := range selfHosts {
		if self != "" && normHost(self) == host {
			return nil, errors.New("long_url points to this shortener (redirect loop)")
		}
	}
	return u, nil
}

// hostOnly strips the port of a Host header value.
func hostOnly(hostport string) string {
	if u, err := url.Parse("//" + hostport); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return hostport
}
