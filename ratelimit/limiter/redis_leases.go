package limiter

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/lease.lua
var leaseLua string

// leaseScript refreshes the concurrency leases of one slot in one call.
var leaseScript = redis.NewScript(leaseLua)

// Refresh implements Leaser: one script call per Redis Cluster slot (one
// off a cluster), at most absorbChunk leases each, concurrently.
func (s *RedisStore) Refresh(ctx context.Context, leases []Lease) ([]bool, error) {
	alive := make([]bool, len(leases))
	idx := make([]int, len(leases))
	for i := range idx {
		idx[i] = i
	}
	groups := [][]int{idx}
	if _, ok := s.c.(*redis.ClusterClient); ok {
		groups = groupBySlot(idx, func(i int) string { return leases[i].Key })
	}
	var calls [][]int
	for _, g := range groups {
		for len(g) > absorbChunk {
			calls = append(calls, g[:absorbChunk])
			g = g[absorbChunk:]
		}
		calls = append(calls, g)
	}
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for c, call := range calls {
		wg.Go(func() { errs[c] = s.refreshCall(ctx, leases, call, alive) })
	}
	wg.Wait()
	return alive, errors.Join(errs...)
}

// refreshCall refreshes leases[idx...] in one script call, setting their
// entries of alive.
func (s *RedisStore) refreshCall(ctx context.Context, leases []Lease, idx []int, alive []bool) error {
	keys := make([]string, 0, len(idx))
	args := make([]any, 0, 2*len(idx))
	for _, i := range idx {
		l := leases[i]
		if err := checkLeaseID(l.ID); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidAsk, err)
		}
		keys = append(keys, l.Key)
		args = append(args, l.ID, leaseTTLms(l.TTL))
	}
	v, err := leaseScript.Run(ctx, s.c, keys, args...).Int64Slice()
	if err != nil {
		return fmt.Errorf("ratelimit lease refresh: %w", err)
	}
	if len(v) != len(idx) {
		return fmt.Errorf("ratelimit lease refresh: %d replies for %d leases", len(v), len(idx))
	}
	for j, i := range idx {
		alive[i] = v[j] == 1
	}
	return nil
}

// Release implements Leaser: one ZREM per lease, pipelined (a cluster
// client sends each to its slot's node).
func (s *RedisStore) Release(ctx context.Context, leases []Lease) error {
	if len(leases) == 1 {
		if err := s.c.ZRem(ctx, leases[0].Key, leases[0].ID).Err(); err != nil {
			return fmt.Errorf("ratelimit lease release: %w", err)
		}
		return nil
	}
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, l := range leases {
			p.ZRem(ctx, l.Key, l.ID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ratelimit lease release: %w", err)
	}
	return nil
}

// leaseTTLms is a lease TTL in whole milliseconds (at least 1), as the
// scripts receive it.
func leaseTTLms(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

var _ Leaser = (*RedisStore)(nil)
