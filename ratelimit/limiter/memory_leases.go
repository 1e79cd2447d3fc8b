package limiter

import "context"

// Refresh implements Leaser.
func (s *MemoryStore) Refresh(ctx context.Context, leases []Lease) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	alive := make([]bool, len(leases))
	now := s.now().UnixMicro()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range leases {
		alive[i] = s.refresh(l, now)
	}
	return alive, nil
}

// refresh extends one live lease to l.TTL from now; s is locked.
func (s *MemoryStore) refresh(l Lease, now int64) bool {
	e := s.keys[l.Key]
	if e == nil || e.code != codeConcurrency || !e.ok {
		return false
	}
	if exp, ok := e.leases[l.ID]; !ok || exp <= now {
		return false
	}
	exp := now + l.TTL.Microseconds()
	e.leases[l.ID] = exp
	e.expireAt = max(e.expireAt, exp)
	return true
}

// Release implements Leaser.
func (s *MemoryStore) Release(ctx context.Context, leases []Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range leases {
		if e := s.keys[l.Key]; e != nil && e.code == codeConcurrency {
			delete(e.leases, l.ID)
		}
	}
	return nil
}

// Refresh implements Leaser: each lease on the store of its zone.
func (m *ZoneMemory) Refresh(ctx context.Context, leases []Lease) ([]bool, error) {
	alive := make([]bool, len(leases))
	for i := range leases {
		p := m.part(leases[i].Key)
		if p == nil {
			continue
		}
		a, err := p.Refresh(ctx, leases[i:i+1])
		if err != nil {
			return nil, err
		}
		alive[i] = a[0]
	}
	return alive, nil
}

// Release implements Leaser.
func (m *ZoneMemory) Release(ctx context.Context, leases []Lease) error {
	for i := range leases {
		if p := m.part(leases[i].Key); p != nil {
			if err := p.Release(ctx, leases[i:i+1]); err != nil {
				return err
			}
		}
	}
	return nil
}

var (
	_ Leaser = (*MemoryStore)(nil)
	_ Leaser = (*ZoneMemory)(nil)
)
