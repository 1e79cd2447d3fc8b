package ratelimit

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// record feeds b n calls of one verdict.
func record(b *breaker, n int, ok bool) {
	for range n {
		if ok {
			b.success(false)
		} else {
			b.failure(false)
		}
	}
}

// The breaker opens when failures over the current and the previous
// second reach breakerThreshold and half of the calls; successes older
// than that no longer count.
func TestBreakerFailureRatio(t *testing.T) {
	c := newClock()
	b := &breaker{now: c.Now}
	record(b, 10, true)
	record(b, 9, false)
	if s := b.state(); s != "closed" {
		t.Fatalf("9 failures of 19 calls: breaker %s, want closed", s)
	}
	record(b, 1, false)
	if s := b.state(); s != "open" {
		t.Fatalf("10 failures of 20 calls: breaker %s, want open", s)
	}

	// Successes two seconds old are out of the window.
	b = &breaker{now: c.Now}
	record(b, 100, true)
	c.Add(2 * time.Second)
	record(b, breakerThreshold-1, false)
	if s := b.state(); s != "closed" {
		t.Fatalf("%d failures: breaker %s, want closed", breakerThreshold-1, s)
	}
	record(b, 1, false)
	if s := b.state(); s != "open" {
		t.Fatalf("%d failures, the successes gone: breaker %s, want open", breakerThreshold, s)
	}
	// A successful probe closes it with a clean slate.
	c.Add(breakerCooldown)
	if ok, probe := b.allow(context.Background()); !ok || !probe {
		t.Fatalf("after the cooldown: allow = %v, probe = %v; want the probe", ok, probe)
	}
	b.success(true)
	record(b, breakerThreshold-1, false)
	if s := b.state(); s != "closed" {
		t.Errorf("after a successful probe and %d failures: breaker %s, want closed", breakerThreshold-1, s)
	}
}

// A handful of timeouts among many answers never opens the breaker, even
// when they come one after another.
func TestBreakerIgnoresFewTimeouts(t *testing.T) {
	c := newClock()
	b := &breaker{now: c.Now}
	for range 20 { // 20 seconds of traffic: 100 answers and 10 timeouts each
		record(b, 50, true)
		record(b, 10, false)
		record(b, 50, true)
		if s := b.state(); s != "closed" {
			t.Fatalf("breaker %s after a few timeouts among many answers, want closed", s)
		}
		c.Add(time.Second)
	}
}

// ctxStore answers only when its caller's context ends.
type ctxStore struct{ calls int }

func (s *ctxStore) Decide(ctx context.Context, asks []limiter.Ask) ([]limiter.Result, error) {
	s.calls++
	<-ctx.Done()
	return nil, ctx.Err()
}

// A probe that ends without a verdict (its client left) releases the
// probe: the next request probes, and a working store closes the breaker.
func TestBreakerProbeReleased(t *testing.T) {
	c := newClock()
	h := &Handler{Zones: []*Zone{zone("released", 10, time.Minute)}, store: new(failingStore), now: c.Now,
		Timeout: caddy.Duration(5 * time.Second)}
	provision(t, h)
	next := new(statusHandler)
	for range breakerThreshold {
		do(h, next, get("/"))
	}
	if s := h.breaker.state(); s != "open" {
		t.Fatalf("breaker %s, want open", s)
	}
	c.Add(breakerCooldown)
	cs := new(ctxStore)
	h.store = cs
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client is gone
	do(h, next, get("/").WithContext(ctx))
	if cs.calls != 1 {
		t.Fatalf("store calls = %d, want the probe", cs.calls)
	}
	h.store = limiter.NewMemoryStore(c.Now, 0)
	if s := do(h, next, get("/")).status; s != http.StatusOK {
		t.Errorf("next request: status %d, want 200 (it probes a working store)", s)
	}
	if s := h.breaker.state(); s != "closed" {
		t.Errorf("breaker %s, want closed", s)
	}
}

// slowScripts is a go-redis hook delaying every script round trip.
type slowScripts struct{ d time.Duration }

func (h slowScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h slowScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if testenv.IsScriptCmd(cmd) {
			time.Sleep(h.d)
		}
		return next(ctx, cmd)
	}
}

func (h slowScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A flood whose decisions queue behind each other for longer than the
// timeout, while every round trip answers within it, is no store failure:
// nothing fails open, no store error is counted, the breaker stays closed.
func TestFloodQueuedIsNotAStoreFailure(t *testing.T) {
	srv := testenv.StartRedis(t)
	const timeout, n = 200 * time.Millisecond, 300
	h := &Handler{
		Zones:   []*Zone{zone("flood-queued", 1000, time.Minute)},
		Redis:   &redispool.Config{URL: srv.URL(), PoolSize: 8, KeyPrefix: "edgekit-test-" + testenv.RandomID(6)},
		Timeout: caddy.Duration(timeout),
	}
	provision(t, h)
	next := new(statusHandler)
	if s := do(h, next, get("/", "X-API-Key", "warm")).status; s != http.StatusOK {
		t.Fatalf("warm-up: status %d", s)
	}
	h.client.AddHook(slowScripts{d: timeout / 2})
	errs0, open0 := counterValue(metrics.storeErrors), decisions("flood-queued", "fail_open")
	start := time.Now()
	counts := concurrently(t, n, func(int) int { return do(h, next, get("/", "X-API-Key", "k")).status })
	took := time.Since(start)
	if counts[http.StatusOK] != n {
		t.Errorf("statuses %v, want %d × 200", counts, n)
	}
	if d := counterValue(metrics.storeErrors) - errs0; d != 0 {
		t.Errorf("store_errors_total grew by %v, want 0", d)
	}
	if d := decisions("flood-queued", "fail_open") - open0; d != 0 {
		t.Errorf("fail_open grew by %v, want 0", d)
	}
	if s := h.breaker.state(); s != "closed" {
		t.Errorf("breaker %s, want closed", s)
	}
	t.Logf("%d requests in %v (each round trip %v, timeout %v)", n, took, timeout/2, timeout)
}
