package urlpolicy

import (
	"errors"
	"strings"
)

var (
	errDomainIP     = errors.New("a link domain is a name, not an IP address")
	errDomainLabels = errors.New("a link domain needs at least two labels (example.com)")
	errDomainLDH    = errors.New("a link domain's labels are letters, digits and inner hyphens (no '_', no label starting or ending with '-')")
	errDomainPort   = errors.New("a link domain has no port, path or userinfo")
)

// LinkDomain reads the name of a link domain (a host the shortener
// answers for, and gets certificates for) the way a browser reads the host
// of http://<name>/: IDNA-mapped to lower-case ASCII, a trailing dot
// dropped (the same name). It refuses an IP address, a single label, and
// labels that are not LDH (letters, digits, inner hyphens: what a
// certificate may name), besides everything ParseHost refuses.
func LinkDomain(input string) (string, error) {
	if strings.ContainsAny(input, ":/@\\?#[] ") {
		return "", errDomainPort
	}
	h, err := ParseHost(input)
	if err != nil {
		return "", err
	}
	if h.kind != hostDomain {
		return "", errDomainIP
	}
	name := strings.TrimSuffix(h.ASCII, ".")
	if !strings.Contains(name, ".") {
		return "", errDomainLabels
	}
	if !ldh(name) {
		return "", errDomainLDH
	}
	return name, nil
}

// RequestDomain is the link domain a request's Host header names, as
// LinkDomain reads it, or "" when it names none (an IP address, a bad
// name). A Host already in canonical form (lower-case LDH, no trailing
// dot), the usual case, is returned without allocating.
func RequestDomain(hostport string) string {
	host := hostport
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i]
	}
	if ldh(host) && strings.Contains(host, ".") && !numericLabel(host[strings.LastIndexByte(host, '.')+1:]) {
		return host
	}
	d, err := LinkDomain(host)
	if err != nil {
		return ""
	}
	return d
}

// ldh reports whether name is dot-separated labels of a-z, 0-9 and inner
// hyphens, each 1 to 63 bytes, at most 253 in all.
func ldh(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(name); i++ {
		if i < len(name) && name[i] != '.' {
			c := name[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		label := name[start:i]
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

// numericLabel: the last label of a name makes a browser read it as an
// IPv4 address (the standard's "ends in a number").
func numericLabel(label string) bool {
	if strings.Trim(label, "0123456789") == "" {
		return true
	}
	_, ok := parseIPv4Number(label)
	return ok
}
