package jwtkey

import (
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/maypok86/otter/v2"
)

// tokenCache remembers verified tokens by the SHA-256 of their bytes, so
// the same token again skips the signature check. It is bounded (otter
// evicts the least useful entries); an entry holds the key set generation
// it was verified with and is a miss under another, and its times are
// checked again at each hit.
type tokenCache struct {
	entries *otter.Cache[[32]byte, *cacheEntry]
}

// cacheEntry is one verified token.
type cacheEntry struct {
	claims *Claims
	times  *jwt.Claims // exp, nbf and iat only
	gen    uint64
}

func newTokenCache(size int) *tokenCache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &tokenCache{entries: otter.Must(&otter.Options[[32]byte, *cacheEntry]{MaximumSize: size})}
}

// get is the entry of digest verified with key set generation gen.
func (c *tokenCache) get(digest [32]byte, gen uint64) (*cacheEntry, bool) {
	e, ok := c.entries.GetIfPresent(digest)
	if !ok || e.gen != gen {
		return nil, false
	}
	return e, true
}

func (c *tokenCache) put(digest [32]byte, e *cacheEntry) { c.entries.Set(digest, e) }

// clear forgets every token: the keys changed.
func (c *tokenCache) clear() { c.entries.InvalidateAll() }
