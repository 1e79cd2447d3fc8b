package limiter

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestReleaseBatches: 64 requests giving their leases back while a batch
// is in flight leave together: a handful of script round trips, not 64,
// and every lease is given back.
func TestReleaseBatches(t *testing.T) {
	c, prefix := testenv.Redis(t)
	rt := &testenv.RoundTrips{}
	s := NewRedisStore(c)
	ctx := context.Background()
	key := prefix + ":inflight:k"
	leases := make([]Lease, 64)
	for i := range leases {
		leases[i] = Lease{Key: key, ID: "l" + strconv.Itoa(i), TTL: time.Minute}
		if r := ask1(t, s, Ask{Key: key, Limit: Limit{Algorithm: Concurrency, Events: 64, Window: time.Minute}, Cost: 1, Lease: leases[i].ID}); !r.Allowed {
			t.Fatalf("lease %d refused", i)
		}
	}
	var queued sync.WaitGroup
	queued.Add(1)
	rt.Before = func() { queued.Wait() } // the first batch waits until the others queue
	c.AddHook(rt)
	var wg sync.WaitGroup
	for i := range leases {
		wg.Go(func() {
			if err := s.Release(ctx, leases[i:i+1]); err != nil {
				t.Error(err)
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	queued.Done()
	wg.Wait()
	if n := rt.N.Load(); n > 4 {
		t.Errorf("64 give-backs took %d script round trips, want a few (batched)", n)
	}
	if r := ask1(t, s, Ask{Key: key, Limit: Limit{Algorithm: Concurrency, Events: 64, Window: time.Minute}}); r.Remaining != 64 {
		t.Errorf("%d slots free after every lease was given back, want 64", r.Remaining)
	}
}
