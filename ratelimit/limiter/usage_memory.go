package limiter

import (
	"context"
	"strings"
	"time"
)

// memoryUsage is one key's usage on the memory store (see usage.go).
type memoryUsage struct {
	key      string              // as UsageKeyText keeps it
	periods  map[int64]*[2]int64 // period start (µs) → units, refused
	expireAt int64               // µs: forgotten from then on
}

// recordUsage adds units and refusals to key's usage in p's period
// containing at; s is locked. The memory store keeps the usage of at most
// its max keys: past them, an expired record, else an arbitrary one, goes.
func (s *MemoryStore) recordUsage(key string, p params, at, now, units, refused int64) {
	if s.usage == nil {
		s.usage = map[string]*memoryUsage{}
	}
	u := s.usage[key]
	if u == nil || now >= u.expireAt {
		if u == nil && len(s.usage) >= s.maxKeys {
			s.evictUsage(now)
		}
		u = &memoryUsage{periods: map[int64]*[2]int64{}}
		s.usage[key] = u
	}
	start, _ := p.period(at)
	c := u.periods[start]
	if c == nil {
		c = new([2]int64)
		u.periods[start] = c
		keep := p.usage.Keep.Microseconds()
		for st := range u.periods {
			if st+keep < start {
				delete(u.periods, st)
			}
		}
	}
	c[0] += units
	c[1] += refused
	u.key = UsageKeyText(p.usage.Key)
	_, end := p.period(now)
	u.expireAt = max(u.expireAt, end+p.usage.Keep.Microseconds())
}

// evictUsage makes room for one usage record; s is locked.
func (s *MemoryStore) evictUsage(now int64) {
	var victim string
	for k, u := range s.usage {
		victim = k
		if now >= u.expireAt {
			break
		}
	}
	delete(s.usage, victim)
}

// decidedUsage records the usage of one ask's decision on the memory
// store: its refusal, or its charge when the request was allowed (all);
// s is locked.
func (s *MemoryStore) decidedUsage(key string, p params, allowed, all bool, now int64) {
	switch {
	case !p.usage.on():
	case !allowed:
		s.recordUsage(key, p, now, now, 0, 1)
	case all && p.cost > 0:
		s.recordUsage(key, p, now, now, p.cost, 0)
	}
}

// Usage implements UsageReader.
func (s *MemoryStore) Usage(ctx context.Context, prefix, zone string, start time.Time) ([]UsageRow, error) {
	now := s.now().UnixMicro()
	head := prefix + ":" + zone + ":"
	st := start.UnixMicro()
	s.mu.Lock()
	var out []UsageRow
	for k, u := range s.usage {
		c := u.periods[st]
		if c == nil || now >= u.expireAt || !strings.HasPrefix(k, head) {
			continue
		}
		out = append(out, UsageRow{Key: u.key, StoreKey: k, Start: start, Units: c[0], Refused: c[1]})
	}
	s.mu.Unlock()
	sortUsage(out)
	return out, ctx.Err()
}

// Usage implements UsageReader.
func (m *ZoneMemory) Usage(ctx context.Context, prefix, zone string, start time.Time) ([]UsageRow, error) {
	if p := m.zones[zone]; p != nil {
		return p.Usage(ctx, prefix, zone, start)
	}
	return nil, ctx.Err()
}

var (
	_ UsageReader = (*RedisStore)(nil)
	_ UsageReader = (*MemoryStore)(nil)
	_ UsageReader = (*ZoneMemory)(nil)
)
