package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultMaxKeys is the memory store's default bound on the number of keys
// it keeps.
const DefaultMaxKeys = 100000

// MemoryStore is the in-process Store: the same algorithms as the Redis
// store, on an injectable clock, for a single Caddy instance (and for the
// local fallback when Redis fails). It keeps at most maxKeys keys, dropping
// the least recently used, and forgets a key's state when it would have
// expired on Redis.
type MemoryStore struct {
	now func() time.Time

	mu   sync.Mutex
	keys *simplelru.LRU[string, *memoryEntry]
}

// memoryEntry is one key's state; only the algorithm's own field is used.
type memoryEntry struct {
	code     int
	ok       bool  // holds state (else: as if the key did not exist)
	expireAt int64 // µs; the state is forgotten from then on
	bucket   tokenBucket
	counters windowCounters
	log      requestLog
	queue    virtualQueue
}

// NewMemoryStore returns a memory store reading time from now (nil:
// time.Now) and keeping at most maxKeys keys (<= 0: DefaultMaxKeys).
func NewMemoryStore(now func() time.Time, maxKeys int) *MemoryStore {
	if now == nil {
		now = time.Now
	}
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	keys, _ := simplelru.NewLRU[string, *memoryEntry](maxKeys, nil) // errors only for size <= 0
	return &MemoryStore{now: now, keys: keys}
}

// Len reports how many keys the store holds.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys.Len()
}

// Decide implements Store: every Ask is decided first, then, only if all
// pass, all are charged. Keys within one call should be distinct (each Ask
// sees the state from before the call).
func (s *MemoryStore) Decide(ctx context.Context, asks []Ask) ([]Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var pbuf [4]params
	ps := pbuf[:0]
	for i := range asks {
		p, err := paramsOf(asks[i])
		if err != nil {
			return nil, fmt.Errorf("zone key %d: %w", i, err)
		}
		ps = append(ps, p)
	}
	results := make([]Result, len(asks))
	now := s.now().UnixMicro()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropExpiredOldest(now)

	var ebuf [4]*memoryEntry
	entries := ebuf[:0]
	var dbuf [4]decision
	decisions := dbuf[:0]
	all := true
	for i := range asks {
		e := s.lookup(asks[i].Key, ps[i].code, now)
		d := e.decide(now, ps[i])
		entries = append(entries, e)
		decisions = append(decisions, d)
		all = all && d.allowed
		results[i] = d.result(now)
	}
	if !all {
		return results, nil
	}
	for i, e := range entries {
		if ps[i].cost == 0 {
			continue
		}
		if e == nil {
			e = &memoryEntry{code: ps[i].code}
			s.keys.Add(asks[i].Key, e)
		}
		e.take(now, ps[i], decisions[i])
	}
	return results, nil
}

// lookup returns the key's entry, or nil when it has none; an expired
// entry or one of another algorithm is cleared.
func (s *MemoryStore) lookup(key string, code int, now int64) *memoryEntry {
	e, found := s.keys.Get(key)
	if !found {
		return nil
	}
	if e.code != code || now >= e.expireAt {
		e.code = code
		e.ok = false
		e.log.times, e.log.head = e.log.times[:0], 0
	}
	return e
}

// dropExpiredOldest removes the least recently used key if its state has
// expired, so idle keys go away even without a flood of new ones.
func (s *MemoryStore) dropExpiredOldest(now int64) {
	if _, e, found := s.keys.GetOldest(); found && now >= e.expireAt {
		s.keys.RemoveOldest()
	}
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
	}
	e.ok = true
	e.expireAt = d.expireAt
}

// Reset implements Resetter.
func (s *MemoryStore) Reset(ctx context.Context, keys ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		s.keys.Remove(k)
	}
	return nil
}

var (
	_ Store    = (*MemoryStore)(nil)
	_ Resetter = (*MemoryStore)(nil)
)
