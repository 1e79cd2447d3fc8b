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

// leaseScript refreshes or gives back the concurrency leases of one slot
// in one call.
var leaseScript = redis.NewScript(leaseLua)

// leaseCalls splits leases into the script calls that carry them: one
// per Redis Cluster slot (one off a cluster), at most absorbChunk leases
// each; a call is the indexes of its leases.
func (s *RedisStore) leaseCalls(leases []Lease) [][]int {
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
	return calls
}

// eachLeaseCall runs call for every script call of leases, concurrently,
// and joins their errors.
func (s *RedisStore) eachLeaseCall(leases []Lease, call func(idx []int) error) error {
	calls := s.leaseCalls(leases)
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for c, idx := range calls {
		wg.Go(func() { errs[c] = call(idx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Refresh implements Leaser.
func (s *RedisStore) Refresh(ctx context.Context, leases []Lease) ([]bool, error) {
	alive := make([]bool, len(leases))
	err := s.eachLeaseCall(leases, func(idx []int) error { return s.refreshCall(ctx, leases, idx, alive) })
	return alive, err
}

// refreshCall refreshes leases[idx...] in one script call, setting their
// entries of alive.
func (s *RedisStore) refreshCall(ctx context.Context, leases []Lease, idx []int, alive []bool) error {
	keys := make([]string, 0, len(idx))
	args := make([]any, 1, 1+2*len(idx))
	args[0] = "f"
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

// Release implements Leaser: the leases of concurrent requests leave
// together (see releaser).
func (s *RedisStore) Release(ctx context.Context, leases []Lease) error {
	return s.rel.release(ctx, leases)
}

// releaseNow gives leases back in one script call per slot.
func (s *RedisStore) releaseNow(ctx context.Context, leases []Lease) error {
	return s.eachLeaseCall(leases, func(idx []int) error {
		keys := make([]string, 0, len(idx))
		args := make([]any, 1, 1+len(idx))
		args[0] = "x"
		for _, i := range idx {
			keys = append(keys, leases[i].Key)
			args = append(args, leases[i].ID)
		}
		if err := leaseScript.Run(ctx, s.c, keys, args...).Err(); err != nil {
			return fmt.Errorf("ratelimit lease release: %w", err)
		}
		return nil
	})
}

// leaseTTLms is a lease TTL in whole milliseconds (at least 1), as the
// scripts receive it.
func leaseTTLms(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

var _ Leaser = (*RedisStore)(nil)
