package limiter

import "sort"

// memoryEvictScan is how many of the least recently used keys a full
// memory store weighs to pick the one it drops (see victim).
const memoryEvictScan = 16

// touch marks e as the most recently used.
func (s *MemoryStore) touch(e *memoryEntry) {
	if s.lru.next == e {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	s.pushFront(e)
}

func (s *MemoryStore) pushFront(e *memoryEntry) {
	e.prev, e.next = &s.lru, s.lru.next
	s.lru.next.prev = e
	s.lru.next = e
}

// remove drops e from the store.
func (s *MemoryStore) remove(e *memoryEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	delete(s.keys, e.key)
}

// add returns a new entry for key, holding no state for algorithm code;
// when the store is full, the victim's entry is dropped and reused. When
// every key weighed is part of the decision under way (a store smaller
// than one decision), the entry returned is not kept.
func (s *MemoryStore) add(key string, code int, now int64) *memoryEntry {
	var e *memoryEntry
	if len(s.keys) >= s.maxKeys {
		if e = s.victim(now); e == nil {
			return &memoryEntry{key: key, code: code}
		}
		s.remove(e)
		*e = memoryEntry{log: requestLog{times: e.log.times[:0]}}
	} else {
		e = new(memoryEntry)
	}
	e.key, e.code = key, code
	s.keys[key] = e
	s.pushFront(e)
	return e
}

// dropExpiredOldest removes the least recently used key if its state has
// expired, so idle keys go away even without a flood of new ones.
func (s *MemoryStore) dropExpiredOldest(now int64) {
	if e := s.lru.prev; e != &s.lru && now >= e.expireAt {
		s.remove(e)
	}
}

// victim is the key a full store drops: of the memoryEvictScan least
// recently used not taking part in the decision under way, the first
// whose state equals a fresh one (nothing is lost by dropping it), else
// the one that has used the least share of its quota, the oldest of
// equals. A refused key thus outlives every key with something left among
// those weighed: a client picking many key values cannot reset another
// key by flooding the store with barely used keys; it must first use up
// as much of the quota of the keys weighed beside it.
func (s *MemoryStore) victim(now int64) *memoryEntry {
	var best *memoryEntry
	bestUsed := 2.0
	e := s.lru.prev
	for range memoryEvictScan {
		if e == &s.lru {
			break
		}
		if e.busy {
			e = e.prev
			continue
		}
		used := e.usedShare(now)
		if used <= 0 {
			return e
		}
		if used < bestUsed {
			best, bestUsed = e, used
		}
		e = e.prev
	}
	return best
}

// usedShare is how much of its quota the key has in use at now, from 0 (its
// state equals a fresh one) to 1 (nothing left), under the quota it was
// last charged under.
func (e *memoryEntry) usedShare(now int64) float64 {
	if !e.ok || now >= e.expireAt {
		return 0
	}
	if e.code == codeBan {
		return e.banShare(now)
	}
	p := e.p
	events, w := float64(p.events), p.windowUs
	var used float64
	switch e.code {
	case codeTokenBucket:
		capacity := events
		if p.burst > 0 {
			capacity = float64(p.burst)
		}
		level := tokenLevel(e.bucket.tokens, e.bucket.ts, now, capacity, events/float64(w))
		used = (capacity - level) / capacity
	case codeFixedWindow:
		if start, _ := p.period(now); e.counters.start == start {
			used = float64(e.counters.cur) / events
		}
	case codeSlidingWindow:
		used = slidingAt(e.counters, true, now, w) / events
	case codeSlidingLog:
		live := e.log.times[e.log.head:]
		cut := now - w
		n := len(live) - sort.Search(len(live), func(i int) bool { return live[i] > cut })
		used = float64(n) / events
	case codeLeakyBucket:
		interval := float64(w) / events
		used = (e.queue.tat - float64(now)) / (float64(p.burst+1) * interval)
	case codeConcurrency:
		e.leases.trim(now)
		used = float64(len(e.leases)) / events
	}
	return min(max(used, 0), 1)
}
