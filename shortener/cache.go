package shortener

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/targeting"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// state of a cached code.
type state uint8

const (
	stateLive    state = iota + 1 // a link (it may still have expired since)
	stateUnknown                  // negative entry: no such code
	stateGone                     // revoked, or expired when cached
)

// entry is what the caches hold for a code. It is immutable once built, so
// the hot path can share it between requests without copying.
type entry struct {
	state    state
	location string // the long URL
	expires  int64  // Unix nanoseconds; 0: never
	ttl      time.Duration
	rules    *entryRules    // nil: none (cache_rules.go)
	set      *targeting.Set // the link's targeting, compiled once per load; nil: none
	fallback string         // where a live link that does not serve sends visitors; "": nowhere
}

// gone reports whether the entry answers 410 at now (Unix nanoseconds).
func (e *entry) gone(now int64) bool {
	return e.state == stateGone || (e.state == stateLive && e.expires != 0 && now >= e.expires)
}

// maxExpiry is the latest expiry Unix nanoseconds can hold (year 2262).
var maxExpiry = time.Unix(0, math.MaxInt64)

func liveEntry(longURL string, expires time.Time, ttl time.Duration) *entry {
	e := &entry{state: stateLive, location: urlpolicy.ASCIILocation(longURL), ttl: ttl} // once per cache load, not per hit
	if !expires.IsZero() {
		e.expires = math.MaxInt64 // past 2262, Unix nanoseconds overflow
		if expires.Before(maxExpiry) {
			e.expires = expires.UnixNano()
		}
	}
	return e
}

// cache is the read path's memory: an in-process L1 (otter: bounded, TTL,
// negative entries too) in front of an optional shared Redis L2, plus the
// Redis pub/sub channel that drops L1 entries on every instance.
//
// Redis values at <prefix>:l:<code>:
//
//	L<expires unix ms, 0 = never>|<long url>   a link
//	R<expires>|<rules...>|<long url>           a link with rules (encodeRules)
//	T<L|G><expires>|<rules...>|<lengths>|...   a link with targeting or a fallback URL (encodeTargeted)
//	N                                          unknown code (negative entry)
//	G                                          revoked or expired
type cache struct {
	l1       *otter.Cache[string, *entry] // nil: local_cache off
	l1TTL    time.Duration
	negTTL   time.Duration // negative entries in Redis
	cacheTTL time.Duration // link entries in Redis
	now      func() time.Time

	rdb     redis.UniversalClient // nil: no Redis
	prefix  string
	timeout time.Duration // one Redis call on the read path
	channel string

	// epochs count local invalidations, striped by code. A lookup that
	// started before an invalidation of its stripe must not leave its
	// (maybe stale) answer in L1.
	epochs [64]atomic.Uint64

	pubsub *redis.PubSub
	done   chan struct{}

	codes *codeFilter // nil: code_filter off, or a store that lists no codes

	targeting targeting.Options // how a loaded link's targeting is read (compile)

	store  link.Store         // the tier behind Redis (useStore)
	flight singleflight.Group // one lookup per code at a time
	logger *zap.Logger
}

// redisTimeout bounds one Redis call of the read path: Redis down or slow
// costs at most this before the lookup goes to the store. When the store
// fails too, Redis gets a second chance of redisRetryTimeout.
const (
	redisTimeout      = 50 * time.Millisecond
	redisRetryTimeout = time.Second
)

func newCache(entries int, l1TTL, negTTL, cacheTTL time.Duration, now func() time.Time) (*cache, error) {
	c := &cache{l1TTL: l1TTL, negTTL: negTTL, cacheTTL: cacheTTL, now: now, timeout: redisTimeout, logger: zap.NewNop(),
		targeting: targeting.Options{GeoIP: true}}
	if entries > 0 && l1TTL > 0 {
		l1, err := otter.New(&otter.Options[string, *entry]{
			MaximumSize: entries,
			ExpiryCalculator: otter.ExpiryWritingFunc(func(e otter.Entry[string, *entry]) time.Duration {
				return e.Value.ttl
			}),
		})
		if err != nil {
			return nil, err
		}
		c.l1 = l1
	}
	return c, nil
}

// useStore sets the store behind the caches, and the logger of lookups.
func (c *cache) useStore(s link.Store, logger *zap.Logger) {
	c.store, c.logger = s, logger
}

// useRedis attaches the shared Redis and subscribes to the invalidation
// channel; the subscription lives until close.
func (c *cache) useRedis(rdb redis.UniversalClient, prefix string, logger *zap.Logger) {
	c.rdb = rdb
	c.prefix = prefix
	c.channel = prefix + ":invalidate"
	c.pubsub = rdb.Subscribe(context.Background(), c.channel)
	c.done = make(chan struct{})
	ch := c.pubsub.Channel()
	go func() {
		defer close(c.done)
		for msg := range ch {
			// A created code enters the filter before its L1 entry
			// goes, so no lookup in between answers it from the filter.
			c.codes.add(msg.Payload)
			c.dropLocal(msg.Payload)
		}
		logger.Debug("invalidation subscription closed")
	}()
}

func (c *cache) close() {
	if c.pubsub != nil {
		_ = c.pubsub.Close()
		<-c.done
	}
	c.codes.close()
	if c.l1 != nil {
		c.l1.InvalidateAll()
		c.l1.StopAllGoroutines()
	}
}

func (c *cache) key(code string) string { return c.prefix + ":l:" + code }

// local returns the L1 entry for code.
func (c *cache) local(code string) (*entry, bool) {
	if c.l1 == nil {
		return nil, false
	}
	return c.l1.GetIfPresent(code)
}

func (c *cache) epochOf(code string) *atomic.Uint64 {
	var h uint32 = 2166136261 // FNV-1a
	for i := 0; i < len(code); i++ {
		h = (h ^ uint32(code[i])) * 16777619
	}
	return &c.epochs[h%uint32(len(c.epochs))]
}

// epoch returns the invalidation count of code's stripe, read before a
// lookup.
func (c *cache) epoch(code string) uint64 { return c.epochOf(code).Load() }

// setLocal stores e in L1 unless an invalidation of the code's stripe
// happened since the caller read epoch (its answer may predate a create or
// delete).
func (c *cache) setLocal(code string, e *entry, epoch uint64) {
	if c.l1 == nil || e.ttl <= 0 {
		return
	}
	c.l1.Set(code, e)
	if c.epoch(code) != epoch {
		c.l1.Invalidate(code)
	}
}

func (c *cache) dropLocal(code string) {
	c.epochOf(code).Add(1)
	if c.l1 != nil {
		c.l1.Invalidate(code)
	}
}

// localTTL is how long L1 keeps an entry: l1TTL, shorter for negative
// entries when negative_ttl is, and never past a link's expiry.
func (c *cache) localTTL(s state, expires int64) time.Duration {
	ttl := c.l1TTL
	if s == stateUnknown && c.negTTL < ttl {
		ttl = c.negTTL
	}
	if expires != 0 {
		if left := time.Duration(expires - c.now().UnixNano()); left < ttl {
			ttl = max(left, time.Millisecond)
		}
	}
	return ttl
}

// fromLink builds the entry for a stored link; one that has served its
// max_clicks is gone.
func (c *cache) fromLink(l link.Link) *entry {
	if l.Gone(c.now()) || l.Exhausted() {
		return c.goneTo(l.FallbackURL)
	}
	e := liveEntry(l.LongURL, l.ExpiresAt, 0)
	e.ttl = c.localTTL(stateLive, e.expires)
	e.rules = rulesOf(l)
	e.set = c.compile(l.Targeting)
	e.fallback = asciiURL(l.FallbackURL)
	return e
}

func (c *cache) gone() *entry {
	return &entry{state: stateGone, ttl: c.localTTL(stateGone, 0)}
}

// goneTo is a gone entry that redirects to fallback ("": none).
func (c *cache) goneTo(fallback string) *entry {
	e := c.gone()
	e.fallback = asciiURL(fallback)
	return e
}

func asciiURL(u string) string {
	if u == "" {
		return ""
	}
	return urlpolicy.ASCIILocation(u)
}

// compile reads a link's stored targeting. It was judged when saved, so
// no URL policy applies; one that no longer parses (a later version's
// rule, a hand-edited row) is logged, and the link redirects to its own
// long URL.
func (c *cache) compile(targetingJSON []byte) *targeting.Set {
	if len(targetingJSON) == 0 {
		return nil
	}
	set, err := targeting.Parse(targetingJSON, c.targeting)
	if err != nil {
		c.logger.Warn("a link's stored targeting does not parse; it redirects to its long URL", zap.Error(err))
		return nil
	}
	return set
}

func (c *cache) unknown() *entry {
	return &entry{state: stateUnknown, ttl: c.localTTL(stateUnknown, 0)}
}

// redisGet reads code from Redis within the read deadline. A miss is
// (nil, nil); an error means "ask the store".
func (c *cache) redisGet(ctx context.Context, code string, timeout time.Duration) (*entry, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := c.rdb.Get(ctx, c.key(code)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.decode(v)
}

func (c *cache) decode(v string) (*entry, error) {
	switch {
	case v == "N":
		return c.unknown(), nil
	case v == "G":
		return c.gone(), nil
	case strings.HasPrefix(v, "T"):
		t, err := decodeTargeted(v)
		if err != nil {
			return nil, err
		}
		return c.fromTargeted(t), nil
	case strings.HasPrefix(v, "R"):
		exp, rules, long, err := decodeRules(v[1:])
		if err != nil {
			return nil, err
		}
		e := liveEntry(long, exp, 0)
		e.ttl = c.localTTL(stateLive, e.expires)
		e.rules = rules
		return e, nil
	case strings.HasPrefix(v, "L"):
		ms, long, ok := strings.Cut(v[1:], "|")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil || long == "" {
			return nil, errMalformedEntry
		}
		var exp time.Time
		if n != 0 {
			exp = time.UnixMilli(n)
		}
		e := liveEntry(long, exp, 0)
		e.ttl = c.localTTL(stateLive, e.expires)
		return e, nil
	}
	return nil, errMalformedEntry
}

// fromTargeted builds the entry of a T value.
func (c *cache) fromTargeted(t targetedLink) *entry {
	if t.gone {
		return c.goneTo(t.fallback)
	}
	var exp time.Time
	if t.expiresMs != 0 {
		exp = time.UnixMilli(t.expiresMs)
	}
	e := liveEntry(t.long, exp, 0)
	e.ttl = c.localTTL(stateLive, e.expires)
	if t.rules != (entryRules{}) {
		r := t.rules
		e.rules = &r
	}
	e.set = c.compile([]byte(t.targeting))
	e.fallback = asciiURL(t.fallback)
	return e
}

// encodeLink returns the Redis value and TTL for a stored link: cache_ttl,
// never beyond its expiry; revoked, expired and exhausted links become "G".
func (c *cache) encodeLink(l link.Link) (string, time.Duration) {
	now := c.now()
	if l.Gone(now) || l.Exhausted() {
		if l.FallbackURL != "" {
			return encodeTargeted(targetedLink{gone: true, fallback: l.FallbackURL}), c.cacheTTL
		}
		return "G", c.cacheTTL
	}
	ttl := c.cacheTTL
	var ms int64
	if !l.ExpiresAt.IsZero() {
		ms = l.ExpiresAt.UnixMilli()
		if left := l.ExpiresAt.Sub(now); left < ttl {
			ttl = left
		}
	}
	if len(l.Targeting) > 0 || l.FallbackURL != "" {
		t := targetedLink{expiresMs: ms, fallback: l.FallbackURL, targeting: string(l.Targeting), long: l.LongURL}
		if r := rulesOf(l); r != nil {
			t.rules = *r
		}
		return encodeTargeted(t), ttl
	}
	if r := rulesOf(l); r != nil {
		return encodeRules(ms, r, l.LongURL), ttl
	}
	return "L" + strconv.FormatInt(ms, 10) + "|" + l.LongURL, ttl
}

// fill writes what a lookup learnt from the store, with SET NX: a value
// written meanwhile by the API (create, delete) is newer and wins.
func (c *cache) fill(ctx context.Context, code string, l *link.Link) {
	if c.rdb == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if l == nil {
		c.rdb.SetNX(ctx, c.key(code), "N", c.negTTL)
		return
	}
	v, ttl := c.encodeLink(*l)
	if ttl > 0 {
		c.rdb.SetNX(ctx, c.key(code), v, ttl)
	}
}

// publishLink adds a created (or revoked) link's code to the code filter,
// writes the link through to Redis (replacing any negative entry) and tells
// every instance to add the code to its filter and drop its L1 entry.
// Without Redis only this instance's filter and L1 learn.
func (c *cache) publishLink(ctx context.Context, l link.Link) error {
	return c.publishLinks(ctx, []link.Link{l})
}

// localEntries is the size of the handler's L1 cache: 0 when it is off.
func (h *Handler) localEntries() int {
	if h.LocalCacheOff {
		return 0
	}
	return h.LocalCacheEntries
}
