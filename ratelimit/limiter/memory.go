package limiter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxKeys is the memory store's default bound on the number of keys
// it keeps.
const DefaultMaxKeys = 100000

// MemoryStore is the in-process Store: the same algorithms as the Redis
// store, on an injectable clock, for a single Caddy instance (and for the
// local fallback when Redis fails). It keeps at most maxKeys keys and
// forgets a key's state when it would have expired on Redis. When full, it
// drops the key that loses the least by being dropped (see victim): a key
// whose state equals a fresh one first, never a refused key before one
// that has more left.
type MemoryStore struct {
	now     func() time.Time
	maxKeys int
	// order: stores decided together are locked in this order (see
	// ZoneMemory), so that two callers never wait on each other.
	order uint64

	mu    sync.Mutex
	keys  map[string]*memoryEntry
	usage map[string]*memoryUsage // by store key (see usage_memory.go)
	lru   memoryEntry             // sentinel: lru.next is the most recent, lru.prev the oldest
}

// memoryEntry is one key's state; only the algorithm's own field is used.
type memoryEntry struct {
	key        string
	prev, next *memoryEntry // the LRU list

	code     int
	busy     bool   // part of the decision under way: never the victim
	ok       bool   // holds state (else: as if the key did not exist)
	expireAt int64  // µs; the state is forgotten from then on
	p        params // the quota it was last charged under (for victim)
	bucket   tokenBucket
	counters windowCounters
	log      requestLog
	queue    virtualQueue
	bans     banState // code codeBan
	leases   leaseSet
}

// memoryOrder numbers the memory stores (see MemoryStore.order).
var memoryOrder atomic.Uint64

// NewMemoryStore returns a memory store reading time from now (nil:
// time.Now) and keeping at most maxKeys keys (<= 0: DefaultMaxKeys).
func NewMemoryStore(now func() time.Time, maxKeys int) *MemoryStore {
	if now == nil {
		now = time.Now
	}
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	s := &MemoryStore{now: now, maxKeys: maxKeys, order: memoryOrder.Add(1), keys: map[string]*memoryEntry{}}
	s.lru.next, s.lru.prev = &s.lru, &s.lru
	return s
}

// Len reports how many keys the store holds.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

// Decide implements Store: every Ask is decided first, then, only if all
// pass, all are charged. Keys within one call should be distinct (each Ask
// sees the state from before the call).
func (s *MemoryStore) Decide(ctx context.Context, asks []Ask) ([]Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var pbuf [4]params
	ps, err := paramsOfAll(pbuf[:0], asks)
	if err != nil {
		return nil, err
	}
	var sbuf [4]*MemoryStore
	parts := sbuf[:0]
	for range asks {
		parts = append(parts, s)
	}
	now := s.now().UnixMicro()
	withCalendar(ps, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropExpiredOldest(now)
	return decideOn(parts, asks, ps, now), nil
}

// paramsOfAll appends the params of every ask to ps.
func paramsOfAll(ps []params, asks []Ask) ([]params, error) {
	for i := range asks {
		p, err := paramsOf(asks[i])
		if err != nil {
			return nil, fmt.Errorf("zone key %d: %w", i, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// decideOn decides asks[i] (params ps[i]) on parts[i] at now, all or
// nothing. Every part must be locked.
func decideOn(parts []*MemoryStore, asks []Ask, ps []params, now int64) []Result {
	results := make([]Result, len(asks))
	var ebuf [4]*memoryEntry
	entries := ebuf[:0]
	var dbuf [4]decision
	decisions := dbuf[:0]
	all := true
	for i := range asks {
		e := parts[i].lookup(asks[i].Key, ps[i].code, now)
		if e != nil {
			e.busy = true // before decideBanned may add an entry
		}
		var d decision
		if ps[i].ban.counts() {
			d = parts[i].decideBanned(asks[i].Key, e, now, ps[i])
		} else {
			d = e.decide(now, ps[i])
		}
		entries = append(entries, e)
		decisions = append(decisions, d)
		all = all && d.allowed
		results[i] = d.result(now)
	}
	if all {
		for i, e := range entries {
			if ps[i].cost == 0 {
				continue
			}
			if e == nil {
				e = parts[i].add(asks[i].Key, ps[i].code, now)
				e.busy, entries[i] = true, e
			}
			e.take(now, ps[i], decisions[i])
			results[i].Crossed = uint8(decisions[i].crossed)
		}
	}
	for i, e := range entries {
		if e != nil {
			e.busy = false
		}
		parts[i].decidedUsage(asks[i].Key, ps[i], results[i].Allowed, all, now)
	}
	return results
}

// lookup returns the key's entry, marked as the most recently used, or
// nil when it has none; an expired entry or one of another algorithm is
// cleared.
func (s *MemoryStore) lookup(key string, code int, now int64) *memoryEntry {
	e, found := s.keys[key]
	if !found {
		return nil
	}
	s.touch(e)
	if e.code != code || now >= e.expireAt {
		e.clear(code)
	}
	return e
}

// clear makes e hold no state, for algorithm code.
func (e *memoryEntry) clear(code int) {
	e.code = code
	e.ok = false
	e.log.times, e.log.head = e.log.times[:0], 0
	clear(e.leases)
}

// decide decides p for the entry (nil: no state).
func (e *memoryEntry) decide(now int64, p params) decision {
	var ok bool
	if e != nil {
		ok = e.ok
	}
	var d decision
	switch p.code {
	case codeTokenBucket:
		var st tokenBucket
		if ok {
			st = e.bucket
		}
		d, _ = decideTokenBucket(st, ok, now, p)
	case codeFixedWindow:
		var st windowCounters
		if ok {
			st = e.counters
		}
		d, _ = decideFixedWindow(st, ok, now, p)
	case codeSlidingWindow:
		var st windowCounters
		if ok {
			st = e.counters
		}
		d, _ = decideSlidingWindow(st, ok, now, p)
	case codeSlidingLog:
		if e == nil {
			var empty requestLog
			return empty.decide(now, p)
		}
		return e.log.decide(now, p)
	case codeLeakyBucket:
		var st virtualQueue
		if ok {
			st = e.queue
		}
		d, _ = decideLeakyBucket(st, ok, now, p)
	case codeConcurrency:
		var st leaseSet
		if ok {
			st = e.leases
			st.trim(now)
		}
		d = st.decide(p)
		d.expireAt = max(st.latest(now), now+p.windowUs)
	}
	return d
}

// take charges an allowed decision, updating the state in place.
func (e *memoryEntry) take(now int64, p params, d decision) {
	ok := e.ok
	switch p.code {
	case codeTokenBucket:
		_, e.bucket = decideTokenBucket(e.bucket, ok, now, p)
	case codeFixedWindow:
		_, e.counters = decideFixedWindow(e.counters, ok, now, p)
	case codeSlidingWindow:
		_, e.counters = decideSlidingWindow(e.counters, ok, now, p)
	case codeSlidingLog:
		e.log.take(now, p.cost)
	case codeLeakyBucket:
		_, e.queue = decideLeakyBucket(e.queue, ok, now, p)
	case codeConcurrency:
		if e.leases == nil {
			e.leases = leaseSet{}
		}
		e.leases.take(now, p)
	}
	e.ok = true
	e.expireAt = d.expireAt
	e.p = p
}

// Reset implements Resetter.
func (s *MemoryStore) Reset(ctx context.Context, keys ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if e, ok := s.keys[k]; ok {
			s.remove(e)
		}
	}
	return nil
}

var (
	_ Store    = (*MemoryStore)(nil)
	_ Resetter = (*MemoryStore)(nil)
)
