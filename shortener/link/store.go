// Package link is the shortener's model: a link and its codes, metadata
// and per-link rules, edits as JSON Merge Patch with their history, list
// and search queries with their cursors, the reuse and idempotency
// contracts of a create, imports, and the Store interfaces every link
// store implements. It imports nothing of Caddy, zap or the module.
package link

import (
	"context"
	"errors"
	"time"
)

// Errors of a Store.
var (
	// ErrNotFound: no link has this code.
	ErrNotFound = errors.New("link not found")
	// ErrCodeTaken: Create found the code already in use.
	ErrCodeTaken = errors.New("code already taken")
)

// Link is one short link as stored.
type Link struct {
	Code      string
	LongURL   string
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never
	RevokedAt time.Time // zero: live
	// Title, Tags and Notes describe the link for people; redirects never
	// read them. Empty when not given; Tags is nil, not empty, then.
	// Bounds: checkMetadata.
	Title string
	Tags  []string
	Notes string
	// Per-link rules (rules.go); the zero value of each is "no rule".
	// RedirectStatus is 301, 302, 307 or 308; 0: the handler's status.
	RedirectStatus int
	// ValidFrom: before it the code answers 404. Zero: none.
	ValidFrom time.Time
	// MaxClicks bounds the redirects served (1 to 1e12); 0: no bound.
	MaxClicks int64
	// ForwardQuery: append the request's query to LongURL; nil: the
	// handler's forward_query.
	ForwardQuery *bool
	// ClicksServed counts the redirects served against MaxClicks; only the
	// store advances it.
	ClicksServed int64
	// Version is 1 when created and one more with every change, revocation
	// included (LinkEditor). Stores set it; Create ignores it.
	Version int64
	// Custom: the code was chosen by the client, not generated. Only links
	// with generated codes are reused ("reuse": true); links stored before
	// the stores kept this read as custom.
	Custom bool
	// Targeting is the link's destination rules and A/B split as the
	// handler validated and normalised them: the JSON object
	// {"rules":[...],"variants":[...]} (shortener/targeting); nil: none.
	// The stores keep it as given, at most MaxTargetingBytes.
	Targeting []byte
	// FallbackURL is where an expired, revoked, not yet valid or used-up
	// link sends a person instead of answering 404 or 410; "": none. At
	// most MaxFallbackURL bytes; the handler's URL policy judged it.
	FallbackURL string
}

// Gone reports whether the link answers 410 at now (revoked or expired).
func (l Link) Gone(now time.Time) bool {
	return !l.RevokedAt.IsZero() || (!l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt))
}

// Store is the durable home of links: PostgreSQL or the embedded file store.
type Store interface {
	// Get returns the link with this code (revoked and expired ones too), or
	// ErrNotFound.
	Get(ctx context.Context, code string) (Link, error)
	// Create inserts a new link, committed before it returns nil. A code in
	// use gives ErrCodeTaken and changes nothing.
	Create(ctx context.Context, l Link) error
	// Revoke marks the link revoked at the given time; ErrNotFound if absent.
	// Revoking a revoked link keeps the first time and returns nil.
	Revoke(ctx context.Context, code string, at time.Time) error
	// NextBlock reserves size consecutive IDs for sequential codes, safe
	// across instances; it returns the first. IDs start at 1.
	NextBlock(ctx context.Context, size int64) (first int64, err error)
	// Close releases the store's resources.
	Close() error
}

// CodeLister lists the codes a store holds, for the code filter
// (codefilter.go), which answers unknown codes without a lookup. Both stores
// implement it; a Store without it gets no filter, and every code missing
// from the caches is looked up as before.
//
// Each call is one short query (a page), within the store's statement
// timeout at any table size.
type CodeLister interface {
	// ScanCodes returns up to limit codes greater than after in byte order:
	// one page of the listing of every stored link, revoked and expired ones
	// too. The listing starts at after "".
	ScanCodes(ctx context.Context, after string, limit int) ([]string, error)
	// CodesSince returns up to limit links whose creation sequence number is
	// above after, in that order: one page of the links created since a
	// point. Sequence numbers rise with each create (by any writer) but may
	// skip numbers, and a number may become visible after a higher one when
	// its writer commits later. Links stored before the store numbered them
	// have none and appear only in ScanCodes.
	CodesSince(ctx context.Context, after int64, limit int) ([]SeqCode, error)
	// LastSeq returns the highest creation sequence number of a visible
	// link, 0 if none.
	LastSeq(ctx context.Context) (int64, error)
}

// SeqCode is a code with its creation sequence number.
type SeqCode struct {
	Seq  int64
	Code string
}

// ServeCounter is the synchronous counter of links with max_clicks: the
// bound holds across every instance because the store, not a cache,
// decides each redirect. Both stores implement it.
//
// Every redirect answered for such a link counts, GET and HEAD, people,
// bots and prefetches alike: a response carrying the Location is a served
// redirect. (Click counting, clicks.md, counts fewer: GET only, no
// prefetch, and in the background.)
type ServeCounter interface {
	// TakeServe counts one redirect of the link with this code if its
	// max_clicks allows another, durably before it returns. ok reports
	// whether the redirect may be served; left is how many may still be
	// served after it (0 once exhausted). A link without max_clicks: ok,
	// left -1, nothing counted. ErrNotFound if absent.
	TakeServe(ctx context.Context, code string) (left int64, ok bool, err error)
}
