package shortener

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
