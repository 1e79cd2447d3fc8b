package link

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"
)

// ErrBadCursor: a list cursor that no page of this listing handed out
// (garbage, tampered with, or from another sort order). The API answers
// 400 naming "cursor".
var ErrBadCursor = errors.New("cursor: not a cursor of this listing")

// Bounds of a list query.
const (
	MaxListLimit     = 1000 // links per page
	DefaultListLimit = 50
	MinListQuery     = 3   // characters of q: the trigram index needs three
	MaxListQuery     = 200 // characters of q
	MaxCursorLen     = 256 // bytes of an encoded cursor
)

// Link statuses a listing filters on, at the query's Now. Each link has
// exactly one; when several would apply the first of revoked, expired,
// exhausted, scheduled, active wins (a revoked link that has also expired
// is revoked).
const (
	StatusActive    = "active"    // redirects now: none of the others
	StatusExpired   = "expired"   // past expires_at, not revoked
	StatusRevoked   = "revoked"   // revoked (DELETE), whatever its expiry
	StatusExhausted = "exhausted" // max_clicks redirects served, not expired or revoked
	StatusScheduled = "scheduled" // before valid_from, not exhausted, expired or revoked
	StatusAll       = "all"
)

// Sort orders of a listing; ties are broken by code in the same direction.
const (
	SortCreated     = "created"  // oldest first
	SortCreatedDesc = "-created" // newest first (the default)
	SortClicks      = "clicks"   // fewest all-time clicks first
	SortClicksDesc  = "-clicks"  // most clicked first
)

// ListQuery selects one page of links. The zero values of Status, Sort and
// Limit stand for the defaults (active, -created, 50).
type ListQuery struct {
	// Q keeps links whose code, long URL or title contains it, compared
	// case-insensitively; "" keeps all.
	Q string
	// Tag keeps links carrying this tag (exact, case-sensitive); "" keeps all.
	Tag    string
	Status string
	Sort   string
	Limit  int
	// Cursor is the NextCursor of the previous page; "" starts at the top.
	Cursor string
	// Now is the time statuses are judged at.
	Now time.Time
	// Domain keeps the links of this link domain (their keys are
	// DomainKey(Domain, code)); "" keeps the default domain's, whose keys
	// hold no DomainSep.
	Domain string
}

// ListedLink is a link with its all-time click total (0 when none was
// counted, or click counting is off).
type ListedLink struct {
	Link
	Clicks int64
}

// ListPage is one page of a listing.
type ListPage struct {
	Links []ListedLink
	// NextCursor continues the listing after the last link; "" when this
	// page is the last.
	NextCursor string
}

// LinkLister lists links by page. Both stores implement it.
//
// Pages are keyset pages: a cursor holds the sort key (creation time or
// click total, and code) of the last link shown, and the next page starts
// after it. Walking sort=created or -created from the first page to the
// last returns every link that existed when the walk began exactly once,
// whatever is created meanwhile (creation times never change); with
// sort=clicks a link whose total changes between pages may be shown twice
// or not at all.
type LinkLister interface {
	// ListLinks returns one page. A Cursor that does not decode for this
	// Sort gives ErrBadCursor.
	ListLinks(ctx context.Context, q ListQuery) (ListPage, error)
}

// Normalized returns q with its defaults filled in.
func (q ListQuery) Normalized() ListQuery {
	if q.Status == "" {
		q.Status = StatusActive
	}
	if q.Sort == "" {
		q.Sort = SortCreatedDesc
	}
	if q.Limit <= 0 {
		q.Limit = DefaultListLimit
	}
	q.Limit = min(q.Limit, MaxListLimit)
	if q.Now.IsZero() {
		q.Now = time.Now()
	}
	return q
}

// ByClicks reports whether the sort is by click total.
func (q ListQuery) ByClicks() bool { return q.Sort == SortClicks || q.Sort == SortClicksDesc }

// Descending reports whether the sort runs from high to low.
func (q ListQuery) Descending() bool { return q.Sort == SortCreatedDesc || q.Sort == SortClicksDesc }

// status is the one status of l at now (see StatusActive).
func Status(l Link, now time.Time) string {
	switch {
	case !l.RevokedAt.IsZero():
		return StatusRevoked
	case !l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt):
		return StatusExpired
	case l.MaxClicks > 0 && l.ClicksServed >= l.MaxClicks:
		return StatusExhausted
	case !l.ValidFrom.IsZero() && now.Before(l.ValidFrom):
		return StatusScheduled
	default:
		return StatusActive
	}
}

// Cursor is the sort key of the last link of a page: Key is the
// creation time in Unix microseconds or the click total.
type Cursor struct {
	Sort string `json:"s"`
	Key  int64  `json:"k"`
	Code string `json:"c"`
}

// EncodeCursor returns the opaque cursor after l for sort.
func EncodeCursor(sort string, l ListedLink) string {
	c := Cursor{Sort: sort, Key: l.CreatedAt.UnixMicro(), Code: l.Code}
	if sort == SortClicks || sort == SortClicksDesc {
		c.Key = l.Clicks
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a cursor for sort; nil for "". Anything that is not a
// cursor this listing could have handed out is ErrBadCursor.
func DecodeCursor(sort, s string) (*Cursor, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > MaxCursorLen {
		return nil, ErrBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, ErrBadCursor
	}
	var c Cursor
	if err := json.Unmarshal(b, &c); err != nil || c.Sort != sort || !ValidLookupCode(c.Code) || (c.Key < 0 && (sort == SortClicks || sort == SortClicksDesc)) {
		return nil, ErrBadCursor
	}
	return &c, nil
}
