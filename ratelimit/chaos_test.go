package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// chaosSample is what one client saw for one request under load.
type chaosSample struct {
	mode   string // on_error of the handler
	key    string
	status int
	took   time.Duration
}

// chaosLoad sends requests from clients goroutines for dur, spread over the
// handlers (client i uses modes[i%len(modes)]), with a little think time
// between requests. keyOf names the key of a client's n-th request.
func chaosLoad(hs map[string]*Handler, clients int, dur time.Duration, keyOf func(mode string, client, n int) string) []chaosSample {
	modes := []string{"open", "closed", "local"}
	next := new(statusHandler)
	var (
		mu  sync.Mutex
		all []chaosSample
		wg  sync.WaitGroup
	)
	stop := time.Now().Add(dur)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mode := modes[c%len(modes)]
			var mine []chaosSample
			for n := 0; time.Now().Before(stop); n++ {
				key := keyOf(mode, c, n)
				start := time.Now()
				res := do(hs[mode], next, get("/", "X-API-Key", key))
				mine = append(mine, chaosSample{mode: mode, key: key, status: res.status,
					took: time.Since(start)})
				time.Sleep(5 * time.Millisecond)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all
}

// p99 is the 99th percentile of the samples' durations.
func p99(samples []chaosSample) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(samples))
	for i, s := range samples {
		ds[i] = s.took
	}
	slices.Sort(ds)
	return ds[len(ds)*99/100]
}

// checkOutage asserts what clients see while the store is failing: open
// zones never 5xx, closed zones only 503 (or 429), local zones allow exactly
// events/instances per key, and p99 of decisions stays within a small
// multiple of the timeout.
func checkOutage(t *testing.T, fault string, samples []chaosSample, timeout time.Duration, localLimit int) {
	t.Helper()
	byMode := map[string][]chaosSample{}
	for _, s := range samples {
		byMode[s.mode] = append(byMode[s.mode], s)
	}
	for _, mode := range []string{"open", "closed", "local"} {
		if len(byMode[mode]) < 100 {
			t.Errorf("%s, %s: only %d requests under load", fault, mode, len(byMode[mode]))
		}
	}
	statuses := func(mode string) map[int]int {
		m := map[int]int{}
		for _, s := range byMode[mode] {
			m[s.status]++
		}
		return m
	}
	for status, n := range statuses("open") {
		if status >= 500 {
			t.Errorf("%s, open: %d answers %d, want no 5xx", fault, n, status)
		}
	}
	for status, n := range statuses("closed") {
		if status != http.StatusServiceUnavailable && status != http.StatusTooManyRequests {
			t.Errorf("%s, closed: %d answers %d, want only 503 or 429", fault, n, status)
		}
	}
	allowed := map[string]int{}
	for _, s := range byMode["local"] {
		switch s.status {
		case http.StatusOK:
			allowed[s.key]++
		case http.StatusTooManyRequests:
		default:
			t.Errorf("%s, local: status %d, want 200 or 429", fault, s.status)
		}
	}
	for key, n := range allowed {
		if n != localLimit {
			t.Errorf("%s, local: key %s allowed %d times, want events/instances = %d", fault, key, n, localLimit)
		}
	}
	// Generous: -race, hundreds of goroutines on two shared cores. Without
	// the breaker every request would wait the full timeout and more.
	bound := 10 * timeout
	for mode, ss := range byMode {
		if p := p99(ss); p > bound {
			t.Errorf("%s, %s: p99 of decisions %v, want under %v (timeout %v)", fault, mode, p, bound, timeout)
		}
	}
	t.Logf("%s: %d requests, open %v, closed %v, local %v, p99 %v", fault, len(samples),
		statuses("open"), statuses("closed"), statuses("local"), p99(samples))
}

// exactAgain waits until every handler decides exactly on Redis again (8
// concurrent requests on a fresh key: exactly 4 pass, with the store's
// policy; the local fallback would allow 2), and fails if that takes longer than 2s after the store returned.
func exactAgain(t *testing.T, hs map[string]*Handler, fault string, restored time.Time) {
	t.Helper()
	next := new(statusHandler)
	var round atomic.Int64
	for mode, h := range hs {
		for {
			key := fmt.Sprintf("exact-%s-%s-%d", fault, mode, round.Add(1))
			var ok, refused, other atomic.Int64
			concurrently(t, 8, func(int) int {
				res := do(h, next, get("/", "X-API-Key", key))
				switch res.status {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusTooManyRequests:
					refused.Add(1)
				default:
					other.Add(1)
				}
				return res.status
			})
			if ok.Load() == 4 && refused.Load() == 4 {
				break
			}
			if time.Since(restored) > 2*time.Second {
				t.Errorf("%s, %s: 2s after the store returned: %d allowed, %d refused, %d other, want exactly 4 and 4 from the store",
					fault, mode, ok.Load(), refused.Load(), other.Load())
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestChaosRedisFaults puts a fault proxy between three handlers (on_error
// open, closed and local; zones of 4 per minute shared by 2 instances) and a
// throwaway Redis, and drives 240 concurrent clients through each fault in
// turn: stalled, slowed past the timeout, connections cut and refused, and
// Redis killed. After each, Redis returns and exact limiting must resume
// within 2s.
func TestChaosRedisFaults(t *testing.T) {
	srv := testenv.StartRedis(t)
	proxy := testenv.StartFaultProxy(t, srv.Addr())
	const timeout, clients = 100 * time.Millisecond, 240
	hs := map[string]*Handler{}
	for _, mode := range []string{"open", "closed", "local"} {
		h := &Handler{
			Zones: []*Zone{zone("chaos-"+mode, 4, time.Minute)},
			Redis: &redispool.Config{URL: "redis://" + proxy.Addr(), PoolSize: clients,
				KeyPrefix: "edgekit-test-" + testenv.RandomID(6)},
			Timeout:   caddy.Duration(timeout),
			OnError:   mode,
			Instances: 2,
		}
		provision(t, h)
		hs[mode] = h
	}
	// open and closed clients use a fresh key per request, so only the
	// failure mode decides; local clients share 10 keys per fault, so the
	// fallback's quota shows.
	keys := func(fault string) func(string, int, int) string {
		return func(mode string, c, n int) string {
			if mode == "local" {
				return fault + "-k" + strconv.Itoa(c%10)
			}
			return fault + "-" + strconv.Itoa(c) + "-" + strconv.Itoa(n)
		}
	}

	// Warm up: the pool holds its connections before the crowd arrives. A
	// cold burst of 240 dials through the proxy under -race takes longer
	// than the timeout, and the breaker would open before any connection
	// is up.
	warmPool(t, hs["open"], clients)

	// Healthy: open never answers 5xx. (closed may: on a loaded machine a
	// decision that misses its deadline is a store failure by definition.)
	healthy := map[string]map[int]int{"open": {}, "closed": {}, "local": {}}
	for _, s := range chaosLoad(hs, clients, 300*time.Millisecond, keys("healthy")) {
		healthy[s.mode][s.status]++
	}
	for status, n := range healthy["open"] {
		if status >= 500 {
			t.Errorf("healthy, open: %d answers %d, want none", n, status)
		}
	}
	t.Logf("healthy: %v", healthy)

	faults := []struct {
		name    string
		inject  func()
		restore func()
	}{
		{"stalled", func() { proxy.Set(testenv.Stalled) }, func() { proxy.Set(testenv.Pass) }},
		{"slow", func() { proxy.SetLatency(3 * timeout) }, func() { proxy.SetLatency(0) }},
		{"refused", func() { proxy.Set(testenv.Refuse); proxy.Cut() }, func() { proxy.Set(testenv.Pass) }},
		{"killed", srv.Stop, srv.Start},
	}
	for _, f := range faults {
		f.inject()
		samples := chaosLoad(hs, clients, 700*time.Millisecond, keys(f.name))
		checkOutage(t, f.name, samples, timeout, 2)
		f.restore()
		exactAgain(t, hs, f.name, time.Now())
	}
}

// warmPool opens n connections of h's Redis client (shared by handlers on
// the same server) and returns them to its pool.
func warmPool(t *testing.T, h *Handler, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// A slow command holds its connection, so n of them need n.
			// n dials at once through the proxy may miss the 1s dial
			// timeout on a loaded machine: a warm-up tries again.
			var err error
			for range 5 {
				err = h.client.BLPop(ctx, time.Second, "edgekit-test-warm-"+testenv.RandomID(6)).Err()
				if err == nil || errors.Is(err, redis.Nil) {
					return
				}
			}
			t.Errorf("warming the pool: %v", err)
		}()
	}
	wg.Wait()
}
