package shortener

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"
)

// visitorSaltLen is the size of a daily salt: a 256-bit HMAC key.
const visitorSaltLen = 32

// visitorSalter keeps the daily salts of the visitor hash in the link
// store: both real sinks.
type visitorSalter interface {
	// VisitorSalt returns the salt of the UTC day holding day, creating it
	// if no instance has (the first to write it wins, every instance reads
	// the same), and deletes the salts of the days before it.
	VisitorSalt(ctx context.Context, day time.Time) ([]byte, error)
}

// newVisitorSalt returns a fresh random salt.
func newVisitorSalt() []byte {
	b := make([]byte, visitorSaltLen)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather)
	return b
}

// visitorHash is the visitor of a click: a keyed hash (HMAC-SHA-256 under
// the day's salt, 64 bits of it) of the client address and user agent.
// Without the salt, which is deleted when its day ends, it cannot be
// tied to an address; 64 bits are what a HyperLogLog sketch uses.
func visitorHash(salt []byte, addr, ua string) uint64 {
	m := hmac.New(sha256.New, salt)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(addr)))
	m.Write(n[:]) // length-prefixed: ("a", "bc") and ("ab", "c") differ
	m.Write([]byte(addr))
	m.Write([]byte(ua))
	return binary.BigEndian.Uint64(m.Sum(nil))
}

// saltCache holds this process's copy of the current day's salt: one
// day's, replaced (never kept) when a click of another day asks.
type saltCache struct {
	src  visitorSalter
	mu   sync.Mutex
	day  int64
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
func (c *saltCache) cached(at time.Time) []byte {
	day := dayFloor(at).Unix()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.day == day {
		return c.salt
	}
	return nil
}

// get returns the salt of the UTC day holding at.
func (c *saltCache) get(ctx context.Context, at time.Time) ([]byte, error) {
	day := dayFloor(at)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.salt != nil && c.day == day.Unix() {
		return c.salt, nil
	}
	if !c.failed.IsZero() && time.Since(c.failed) < saltRetry {
		return nil, c.err
	}
	salt, err := c.src.VisitorSalt(ctx, day)
	if err != nil {
		c.failed, c.err = time.Now(), err
		return nil, err
	}
	c.failed = time.Time{}
	c.day, c.salt = day.Unix(), salt
	return salt, nil
}
