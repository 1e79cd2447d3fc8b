package link

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors of a DomainStore.
var (
	ErrDomainNotFound = errors.New("link domain not found")
	ErrDomainTaken    = errors.New("link domain already exists")
	ErrTooManyDomains = errors.New("too many link domains")
)

// MaxDomains bounds the link domains of a store.
const MaxDomains = 10000

// Domain is a link domain: a host name under which the handler answers
// codes of its own, beside the handler's site address (the default
// domain, whose links are today's). A link of the domain is stored under
// DomainKey(host, code); a code is unique within its domain.
type Domain struct {
	// Host is the domain's name as urlpolicy.LinkDomain gives it: ASCII
	// (IDNA), lower case, no trailing dot, no port.
	Host string
	// RootRedirect and NotFoundRedirect are where a request for the
	// domain's root, or for a code it does not have, goes (a 302); ""
	// for the handler's own root_redirect and not_found_redirect.
	RootRedirect     string
	NotFoundRedirect string
	// AppleAppSiteAssociation and Assetlinks are the domain's app site
	// association files (JSON, at most 64 KiB each), served at
	// /.well-known/; nil for none.
	AppleAppSiteAssociation json.RawMessage
	Assetlinks              json.RawMessage
	// Keys are the fingerprints of the API keys scoped to this domain: a
	// key named by any domain sees and changes only its domains' links.
	Keys []string
	// CreatedAt and UpdatedAt are set by the caller; Version is 1 when
	// created and one more with every change (stores set it).
	CreatedAt, UpdatedAt time.Time
	Version              int64
}

// DomainStore keeps link domains; both stores implement it.
type DomainStore interface {
	// CreateDomain stores a new domain (Version 1); ErrDomainTaken if its
	// host exists, ErrTooManyDomains past MaxDomains.
	CreateDomain(ctx context.Context, d Domain) error
	// Domain returns the domain of host, or ErrDomainNotFound.
	Domain(ctx context.Context, host string) (Domain, error)
	// Domains returns every domain, by host.
	Domains(ctx context.Context) ([]Domain, error)
	// UpdateDomain applies fn to the domain in one transaction, raises its
	// Version and sets UpdatedAt to now; ErrDomainNotFound if absent. fn
	// may not change Host; its error aborts the change and is returned.
	UpdateDomain(ctx context.Context, host string, now time.Time, fn func(*Domain) error) (Domain, error)
	// DeleteDomain removes the domain; ErrDomainNotFound if absent. Its
	// links stay as they are (the caller revokes them first, if asked).
	DeleteDomain(ctx context.Context, host string) error
}

// DomainSep joins a link domain's host and a code into the key its link
// is stored under. Codes never hold it (ValidLookupCode), so a key holds it
// exactly when its link belongs to a domain other than the default.
const DomainSep = '/'

// DomainKey is the key of the link with code on domain host; host ""
// (the default domain) keys by the code alone, as before domains.
func DomainKey(host, code string) string {
	if host == "" {
		return code
	}
	return host + string(DomainSep) + code
}

// SplitDomainKey is DomainKey's inverse: the host ("" for the default
// domain) and the code of a stored key.
func SplitDomainKey(key string) (host, code string) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == DomainSep {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// DomainLinkRevoker revokes a domain's links, for deleting a domain with
// force; both stores implement it.
type DomainLinkRevoker interface {
	// RevokeDomainLinks revokes, at at, every live link of the domain
	// host (its keys start with host and DomainSep), recording a
	// link.revoked event for each when events are on, as Revoke does. It
	// returns how many it revoked.
	RevokeDomainLinks(ctx context.Context, host string, at time.Time) (int, error)
}

// ValidKey reports whether key could be a link's key: a code that could
// name a link (ValidLookupCode), alone or after a link domain's host
// (lower-case letters, digits, '-' and '.', at most 253 bytes). It does
// not allocate.
func ValidKey(key string) bool {
	host, code := SplitDomainKey(key)
	if len(host) > 253 {
		return false
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return ValidLookupCode(code) && (host == "" || len(key) > len(code)+1)
}
