package clicks

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"
)

// VisitorSaltLen is the size of a daily salt: a 256-bit HMAC key.
const VisitorSaltLen = 32

// VisitorSalter keeps the daily salts of the visitor hash in the link
// store: both real sinks.
type VisitorSalter interface {
	// VisitorSalt returns the salt of the UTC day holding day, creating it
	// if no instance has (the first to write it wins, every instance reads
	// the same), and deletes the salts of the days before it.
	VisitorSalt(ctx context.Context, day time.Time) ([]byte, error)
}

// NewVisitorSalt returns a fresh random salt.
func NewVisitorSalt() []byte {
	b := make([]byte, VisitorSaltLen)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather)
	return b
}

// VisitorHash is the visitor of a click: a keyed hash (HMAC-SHA-256 under
// the day's salt, 64 bits of it) of the client address and user agent.
// Without the salt, which is deleted when its day ends, it cannot be
// tied to an address; 64 bits are what a HyperLogLog sketch uses.
func VisitorHash(salt []byte, addr, ua string) uint64 {
	m := hmac.New(sha256.New, salt)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(addr)))
	m.Write(n[:]) // length-prefixed: ("a", "bc") and ("ab", "c") differ
	m.Write([]byte(addr))
	m.Write([]byte(ua))
	return binary.BigEndian.Uint64(m.Sum(nil))
}

// SaltCache holds this process's copy of the current day's salt: one
// Day's, replaced (never kept) when a click of another day asks.
type SaltCache struct {
	Src  VisitorSalter
	mu   sync.Mutex
	Day  int64
	salt []byte
	// failed: when the store last failed to give a salt; it is not asked
	// again for saltRetry (the writer must not wait on it per click)
	failed time.Time
	err    error
}

// saltRetry is the wait after a failure to read the salt.
const saltRetry = 5 * time.Second

// cached returns the salt of the UTC day holding at if this process holds
// it, else nil.
func (c *SaltCache) cached(at time.Time) []byte {
	day := DayFloor(at).Unix()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Day == day {
		return c.salt
	}
	return nil
}

// Get returns the salt of the UTC day holding at.
func (c *SaltCache) Get(ctx context.Context, at time.Time) ([]byte, error) {
	day := DayFloor(at)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.salt != nil && c.Day == day.Unix() {
		return c.salt, nil
	}
	if !c.failed.IsZero() && time.Since(c.failed) < saltRetry {
		return nil, c.err
	}
	salt, err := c.Src.VisitorSalt(ctx, day)
	if err != nil {
		c.failed, c.err = time.Now(), err
		return nil, err
	}
	c.failed = time.Time{}
	c.Day, c.salt = day.Unix(), salt
	return salt, nil
}
