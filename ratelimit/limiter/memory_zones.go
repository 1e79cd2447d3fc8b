package limiter

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ZoneMemory is a handler's in-process store (or its local fallback): one
// MemoryStore per zone, so that each zone's keys are carried over a reload
// on their own (see carryover.go). An ask goes to the store of the zone its
// key names ("<prefix>:<zone>:…", see StoreKey). A decision over several
// zones locks their stores in a fixed order and stays all or nothing.
type ZoneMemory struct {
	now    func() time.Time
	prefix string // the key prefix and ':'
	zones  map[string]*MemoryStore
}

// NewZoneMemory returns a ZoneMemory without zones (see SetZone); keys
// start with prefix.
func NewZoneMemory(now func() time.Time, prefix string) *ZoneMemory {
	return &ZoneMemory{now: now, prefix: prefix + ":", zones: map[string]*MemoryStore{}}
}

// SetZone makes s the store of zone's keys. Not safe for use concurrently
// with decisions: a handler sets its zones while it is provisioned.
func (m *ZoneMemory) SetZone(zone string, s *MemoryStore) {
	m.zones[zone] = s
}

// part is the store of the zone key names; nil when none.
func (m *ZoneMemory) part(key string) *MemoryStore {
	rest, ok := strings.CutPrefix(key, m.prefix)
	if !ok {
		return nil
	}
	zone, _, ok := strings.Cut(rest, ":")
	if !ok {
		return nil
	}
	return m.zones[zone]
}

// Decide implements Store (see MemoryStore.Decide).
func (m *ZoneMemory) Decide(ctx context.Context, asks []Ask) ([]Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var pbuf [4]params
	ps, err := paramsOfAll(pbuf[:0], asks)
	if err != nil {
		return nil, err
	}
	var sbuf, lbuf [4]*MemoryStore
	parts, locks := sbuf[:0], lbuf[:0]
	for i := range asks {
		p := m.part(asks[i].Key)
		if p == nil {
			return nil, fmt.Errorf("zone key %d: no zone of this handler", i)
		}
		parts = append(parts, p)
		locks = insertOrdered(locks, p)
	}
	now := m.now().UnixMicro()
	withCalendar(ps, now)
	for _, p := range locks {
		p.mu.Lock()
		p.dropExpiredOldest(now)
	}
	results := decideOn(parts, asks, ps, now)
	for _, p := range locks {
		p.mu.Unlock()
	}
	return results, nil
}

// insertOrdered adds p to the stores s, kept in lock order, once.
func insertOrdered(s []*MemoryStore, p *MemoryStore) []*MemoryStore {
	i := 0
	for i < len(s) && s[i].order < p.order {
		i++
	}
	if i < len(s) && s[i] == p {
		return s
	}
	s = append(s, nil)
	copy(s[i+1:], s[i:])
	s[i] = p
	return s
}

// Reset implements Resetter.
func (m *ZoneMemory) Reset(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if p := m.part(k); p != nil {
			if err := p.Reset(ctx, k); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// Len reports how many keys the zones' stores hold.
func (m *ZoneMemory) Len() int {
	n := 0
	for _, p := range m.zones {
		n += p.Len()
	}
	return n
}

var (
	_ Store    = (*ZoneMemory)(nil)
	_ Resetter = (*ZoneMemory)(nil)
)
