// Package urlpolicy judges the long URL a link may point to: the URL's
// characters, scheme and length, its host read as a browser reads it
// (the WHATWG host parser, UTS-46), and the hosts it must not reach:
// denied hosts, private and loopback addresses, the short domain itself.
// It imports nothing of Caddy, zap or the module.
package urlpolicy

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLongURL is the longest target URL accepted at creation, in bytes. Its
// stored ASCII form (host in punycode, other non-ASCII percent-encoded) is
// at most three times as long.
const MaxLongURL = 2048

// Policy holds the rules a long URL must pass before it becomes a link:
// the checks that keep the short domain from serving as a phishing, XSS,
// SSRF-by-redirect or redirect-loop tool. Every rule judges the host as a
// browser reads it (host.go). Create uses it; so must any future edit.
type Policy struct {
	schemes     map[string]bool // lower-case
	exact       map[string]bool // denied hosts, as denyKey
	suffix      []string        // denied "*.example.com" entries as ".example.com"
	denyPrivate bool            // refuse loopback, private, link-local... (private.go)
}

// New builds the policy. A deny_hosts entry that is not a host
// is an error naming it (Validate reports it).
func New(allowSchemes, denyHosts []string, denyPrivate bool) (Policy, error) {
	p := Policy{schemes: map[string]bool{}, exact: map[string]bool{}, denyPrivate: denyPrivate}
	for _, s := range allowSchemes {
		p.schemes[strings.ToLower(s)] = true
	}
	for _, entry := range denyHosts {
		key, wildcard, err := ParseDenyEntry(entry)
		if err != nil {
			return p, err
		}
		if wildcard {
			p.suffix = append(p.suffix, "."+key)
		} else {
			p.exact[key] = true
		}
	}
	return p, nil
}

// ParseDenyEntry reads a deny_hosts entry as a URL host (a Unicode,
// percent-encoded or numeric entry works), or "*.<domain>".
func ParseDenyEntry(entry string) (key string, wildcard bool, err error) {
	if rest, ok := strings.CutPrefix(entry, "*."); ok {
		h, err := ParseHost(rest)
		if err != nil || h.kind != hostDomain {
			return "", false, fmt.Errorf("invalid deny_hosts entry '%s': '*.' must precede a domain name", entry)
		}
		return denyKey(h), true, nil
	}
	h, err := ParseHost(bracketIPv6(entry))
	if err != nil {
		return "", false, fmt.Errorf("invalid deny_hosts entry '%s': %v", entry, err)
	}
	return denyKey(h), false, nil
}

// bracketIPv6 puts a bare IPv6 address (as url.URL.Hostname returns it)
// in brackets, as a URL writes it.
func bracketIPv6(host string) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		return "[" + host + "]"
	}
	return host
}

// denyKey is what deny_hosts and the self-loop check compare: the ASCII
// host without a trailing dot, an IPv4-mapped IPv6 address as its IPv4.
func denyKey(h Host) string {
	if h.kind == hostIPv6 && h.addr.Is4In6() {
		return h.addr.Unmap().String()
	}
	return strings.TrimSuffix(h.ASCII, ".")
}

// denied reports whether key (a denyKey) is in deny_hosts: an exact
// entry, or a subdomain of a "*.suffix" entry.
func (p Policy) denied(key string) bool {
	if p.exact[key] {
		return true
	}
	for _, s := range p.suffix {
		if strings.HasSuffix(key, s) {
			return true
		}
	}
	return false
}

// Check validates raw as a link target and returns what to store: raw with
// its host in ASCII (as a browser serializes it) and any other non-ASCII
// byte percent-encoded. selfHosts are the host names of this shortener
// (the request's host, base_url's host): a link to them would redirect to
// itself. The error says what is wrong, for the API's answer.
func (p Policy) Check(raw string, selfHosts ...string) (string, error) {
	if err := checkChars(raw); err != nil {
		return "", err
	}
	t, err := splitTarget(raw) // t.scheme is set whenever raw has one
	if t.scheme != "" && !p.schemes[t.scheme] {
		return "", fmt.Errorf("long_url scheme '%s' is not allowed", raw[:len(t.scheme)])
	}
	if err != nil {
		return "", err
	}
	h, err := t.parseHost()
	if err != nil {
		return "", err
	}
	key := denyKey(h)
	if p.denied(key) {
		return "", fmt.Errorf("long_url host '%s' is not allowed", h.ASCII)
	}
	for _, self := range selfHosts {
		if self != "" && selfKey(self) == key {
			return "", errors.New("long_url points to this shortener (redirect loop)")
		}
	}
	if p.denyPrivate && privateHost(h) {
		return "", fmt.Errorf("long_url host '%s' is a loopback, private or link-local address or a localhost name (deny_private)", h.ASCII)
	}
	out := t.ascii(h)
	if _, err := url.Parse(out); err != nil {
		return "", errors.New("long_url is not a valid URL")
	}
	return out, nil
}

// checkChars refuses what no link needs anywhere in the URL: invalid
// UTF-8, whitespace, backslashes, control characters, and bidi and format
// controls (Unicode category Cf: U+202E, U+200E/F, U+2066-2069, U+00AD...).
func checkChars(raw string) error {
	if raw == "" {
		return errors.New("long_url is required")
	}
	if len(raw) > MaxLongURL {
		return fmt.Errorf("long_url is longer than %d bytes", MaxLongURL)
	}
	if !utf8.ValidString(raw) {
		return errors.New("long_url is not valid UTF-8")
	}
	for _, r := range raw {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == '\\' {
			return errors.New("long_url contains whitespace, a backslash or a control character")
		}
		if unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("long_url contains the bidi or format control %U", r)
		}
	}
	return nil
}

// target is a long URL cut as the WHATWG parser cuts a URL with an
// authority: scheme "://" authority rest.
type target struct {
	scheme string // lower-case
	host   string // as written
	port   string // ":<n>" canonical, "" when absent or the scheme's default
	rest   string // path, query and fragment, from the first '/', '?' or '#'
}

// defaultPorts of the WHATWG special schemes (file has none).
var defaultPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21", "file": ""}

func splitTarget(raw string) (target, error) {
	var t target
	i := strings.IndexByte(raw, ':')
	if i <= 0 || !validScheme(raw[:i]) {
		return t, errors.New("long_url must be an absolute URL")
	}
	t.scheme = strings.ToLower(raw[:i])
	after, ok := strings.CutPrefix(raw[i+1:], "//")
	if !ok {
		return t, errors.New("long_url must have a host")
	}
	end := strings.IndexAny(after, "/?#")
	if end < 0 {
		end = len(after)
	}
	authority := after[:end]
	t.rest = after[end:]
	if strings.Contains(authority, "@") {
		return t, errors.New("long_url must not contain user information (user:password@)")
	}
	// The host ends at the first ':' outside brackets.
	inBrackets, colon := false, -1
	for j := 0; j < len(authority) && colon < 0; j++ {
		switch authority[j] {
		case '[':
			inBrackets = true
		case ']':
			inBrackets = false
		case ':':
			if !inBrackets {
				colon = j
			}
		}
	}
	t.host = authority
	if colon >= 0 {
		t.host = authority[:colon]
		port, err := canonicalPort(t.scheme, authority[colon+1:])
		if err != nil {
			return t, err
		}
		t.port = port
	}
	if t.host == "" {
		return t, errors.New("long_url must have a host")
	}
	return t, nil
}

// validScheme: an ASCII letter, then letters, digits, '+', '-' or '.'.
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c|0x20 && c|0x20 <= 'z'
		other := '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
		if !letter && (i == 0 || !other) {
			return false
		}
	}
	return s != ""
}

// canonicalPort reads a port as the WHATWG parser does: digits only, at
// most 65535; empty or the scheme's default port leaves none.
func canonicalPort(scheme, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	if strings.Trim(s, "0123456789") != "" {
		return "", fmt.Errorf("long_url port '%s' is not a number", s)
	}
	digits := strings.TrimLeft(s, "0")
	n, err := strconv.Atoi("0" + digits)
	if len(digits) > 5 || err != nil || n > 65535 {
		return "", fmt.Errorf("long_url port '%s' is out of range", s)
	}
	port := strconv.Itoa(n)
	if def, special := defaultPorts[scheme]; special && def == port {
		return "", nil
	}
	return ":" + port, nil
}

// parseHost reads t's host. A special scheme's host is parsed as a
// browser does; any other scheme's host is opaque to a browser (kept as
// written), so it is accepted only if it already is what the host parser
// makes of it, and judged as such.
func (t target) parseHost() (Host, error) {
	h, err := ParseHost(t.host)
	if err != nil {
		return h, fmt.Errorf("long_url is not a valid URL: %v", err)
	}
	def, special := defaultPorts[t.scheme]
	if !special && h.ASCII != t.host {
		return h, errors.New("long_url host must be written in lower-case ASCII (punycode) with a scheme browsers do not parse")
	}
	if special && def == "" && h.ASCII == "localhost" {
		return h, errors.New("long_url must have a host") // file://localhost/ has none
	}
	return h, nil
}

// ASCII serializes t with its host h: every byte ASCII.
func (t target) ascii(h Host) string {
	return t.scheme + "://" + h.ASCII + t.port + escapeNonASCII(t.rest)
}

// selfKey is the denyKey of one of the shortener's own hosts; a host that
// does not parse is compared lower-cased.
func selfKey(host string) string {
	if h, err := ParseHost(bracketIPv6(host)); err == nil {
		return denyKey(h)
	}
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// escapeNonASCII percent-encodes every non-ASCII byte, as the WHATWG
// serializer does in a path, query or fragment.
func escapeNonASCII(s string) string {
	if isASCII(s) {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) * 3)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ASCIILocation returns the Location of a stored long URL. Links stored
// since hosts are normalised are ASCII and returned as they are. An older
// link's Unicode host is put in ASCII as check does, other non-ASCII bytes
// percent-encoded; when its host does not map, every non-ASCII byte is
// percent-encoded (a browser maps that host as it would have mapped the
// raw one). Location never carries raw Unicode.
func ASCIILocation(long string) string {
	if isASCII(long) {
		return long
	}
	if t, err := splitTarget(long); err == nil {
		if h, err := t.parseHost(); err == nil {
			return t.ascii(h)
		}
	}
	return escapeNonASCII(long)
}

// HostOnly strips the port of a Host header value.
func HostOnly(hostport string) string {
	if u, err := url.Parse("//" + hostport); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return hostport
}
