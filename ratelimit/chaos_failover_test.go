package ratelimit

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// chaosOnly skips the long scenarios under -short; make test runs them.
func chaosOnly(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a long failover scenario: skipped under -short")
	}
}

// waitExact waits until h decides exactly on the store again: 8 concurrent
// requests on a fresh key of a zone of 4 allow exactly 4. It fails if that
// takes longer than within after since. header adds request headers.
func waitExact(t *testing.T, h *Handler, what string, since time.Time, within time.Duration, header ...string) {
	t.Helper()
	next := new(statusHandler)
	for round := 0; ; round++ {
		key := fmt.Sprintf("exact-%s-%d-%s", what, round, testenv.RandomID(3))
		var ok, refused atomic.Int64
		concurrently(t, 8, func(int) int {
			res := do(h, next, get("/", append([]string{"X-API-Key", key}, header...)...))
			switch res.status {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			}
			return res.status
		})
		if ok.Load() == 4 && refused.Load() == 4 {
			t.Logf("%s: exact again %v after the failover", what, time.Since(since).Round(time.Millisecond))
			return
		}
		if time.Since(since) > within {
			t.Fatalf("%s: not exact %v after the failover: %d allowed, %d refused of 8", what, within, ok.Load(), refused.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// backgroundLoad sends requests to the open and closed handlers until
// stopped, and reports a 5xx of the open one or anything but 200/429/503
// of the closed one.
func backgroundLoad(t *testing.T, open, closed *Handler, clients int, header ...string) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Int64
	var total atomic.Int64
	next := new(statusHandler)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !done.Load(); n++ {
				key := "load-" + strconv.Itoa(c) + "-" + strconv.Itoa(n)
				h := open
				if c%2 == 1 {
					h = closed
				}
				res := do(h, next, get("/", append([]string{"X-API-Key", key}, header...)...))
				total.Add(1)
				if (h == open && res.status >= 500) || (h == closed && res.status != 200 && res.status != 429 && res.status != 503) {
					if bad.Add(1) <= 5 {
						t.Errorf("under failover: status %d (%v)", res.status, res.err)
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return func() {
		done.Store(true)
		wg.Wait()
		t.Logf("background load: %d requests, %d unexpected", total.Load(), bad.Load())
	}
}

// failoverHandlers are an open and a closed handler (zones of 4 per
// minute) on cfg.
func failoverHandlers(t *testing.T, cfg redispool.Config, hashTag string) (open, closed *Handler) {
	t.Helper()
	mk := func(mode string) *Handler {
		c := cfg
		c.KeyPrefix = "edgekit-test-" + testenv.RandomID(6)
		h := &Handler{Zones: []*Zone{zone("fo-"+mode, 4, time.Minute)}, Redis: &c,
			Timeout: caddy.Duration(200 * time.Millisecond), OnError: mode, HashTag: hashTag}
		provision(t, h)
		return h
	}
	return mk("open"), mk("closed")
}

// Sentinel: a primary, a replica and three sentinels. SENTINEL FAILOVER,
// then killing the new primary: the handlers (configured with the
// sentinels and master_name) follow each promotion without a restart.
func TestChaosSentinelFailover(t *testing.T) {
	chaosOnly(t)
	s := testenv.StartSentinel(t)
	open, closed := failoverHandlers(t, redispool.Config{Addresses: s.Addrs(), MasterName: s.MasterName}, "")
	waitExact(t, closed, "before", time.Now(), 5*time.Second)
	stop := backgroundLoad(t, open, closed, 40)
	defer stop()

	promoted := s.Failover()
	t.Logf("SENTINEL FAILOVER: primary now %s", promoted)
	waitExact(t, closed, "sentinel failover", time.Now(), 5*time.Second)
	waitExact(t, open, "sentinel failover (open)", time.Now(), 5*time.Second)

	killed, promoted := s.KillPrimary()
	t.Logf("killed primary %s: primary now %s", killed, promoted)
	waitExact(t, closed, "primary killed", time.Now(), 5*time.Second)
	s.RestartNode(killed) // comes back as a replica
	waitExact(t, closed, "old primary back", time.Now(), 5*time.Second)
}

// Cluster: 3 masters with a replica each. Killing the master of the
// tenant's slot: once its replica is promoted, the handler decides exactly
// again, without a restart.
func TestChaosClusterFailover(t *testing.T) {
	chaosOnly(t)
	c := testenv.StartCluster(t, 3)
	open, closed := failoverHandlers(t, redispool.Config{Addresses: c.Addrs(), Cluster: true}, "{http.request.header.X-Tenant}")
	tenant := []string{"X-Tenant", "tenant-1"}
	waitExact(t, closed, "before", time.Now(), 5*time.Second, tenant...)
	stop := backgroundLoad(t, open, closed, 40, tenant...)
	defer stop()

	// Every key of the tenant lives in one slot: kill its master.
	c.KillMaster(limiter.StoreKey(closed.prefix, "fo-closed", "tenant-1", "x"))
	// The client finds the new master when it refreshes its slot map
	// (every second, see redispool), so within a few seconds.
	waitExact(t, closed, "cluster master killed", time.Now(), 5*time.Second, tenant...)
	waitExact(t, open, "cluster master killed (open)", time.Now(), 5*time.Second, tenant...)
}
