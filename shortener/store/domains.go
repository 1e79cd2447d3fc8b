package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// checkNewDomain refuses domains no store should hold: a host that is
// empty, or holds DomainSep (its links' keys would be ambiguous).
func checkNewDomain(d link.Domain) error {
	return checkDomainHost(d.Host)
}

func checkDomainHost(host string) error {
	if host == "" {
		return errors.New("empty link domain host")
	}
	if strings.IndexByte(host, link.DomainSep) >= 0 {
		return fmt.Errorf("link domain host %q holds %q", host, link.DomainSep)
	}
	return nil
}

// errHostChanged refuses an UpdateDomain whose fn changed the host.
func errHostChanged(host, to string) error {
	return fmt.Errorf("updating link domain %s: the host cannot change (to %q)", host, to)
}

// domainLimit is a store's MaxDomains field as it applies: 0 is
// link.MaxDomains.
func domainLimit(n int) int {
	if n <= 0 {
		return link.MaxDomains
	}
	return n
}

// domainPrefix is the start of the keys of host's links.
func domainPrefix(host string) string {
	return link.DomainKey(host, "")
}

// rawOrNil is a copy of b, nil when empty.
func rawOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
