package ratelimit

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// failureHandlers are one handler per failure mode on the same store, each
// with a zone of 4 per minute shared by 2 instances.
func failureHandlers(t *testing.T, url, name string, timeout time.Duration, down bool) map[string]*Handler {
	t.Helper()
	hs := map[string]*Handler{}
	for _, mode := range []string{"open", "closed", "local"} {
		h := &Handler{
			Zones:     []*Zone{zone(name+"-"+mode, 4, time.Minute)},
			Redis:     &redispool.Config{URL: url, KeyPrefix: "edgekit-test-" + testenv.RandomID(6)},
			Timeout:   caddy.Duration(timeout),
			OnError:   mode,
			Instances: 2,
		}
		logs := provision(t, h) // an unreachable Redis at start is not an error
		if down && logs.FilterMessage("rate limit store unreachable at start; on_error applies until it answers").Len() != 1 {
			t.Errorf("%s: no warning for the unreachable store at start", mode)
		}
		hs[mode] = h
	}
	return hs
}

// checkFailureModes: open passes, closed answers 503 with Retry-After: 1,
// local allows ⌈4/2⌉ = 2 then refuses; every decision returns within a
// small multiple of the timeout.
func checkFailureModes(t *testing.T, hs map[string]*Handler, name string, timeout time.Duration) {
	t.Helper()
	bound := 10*timeout + 500*time.Millisecond // generous: -race on shared cores
	next := new(statusHandler)
	timed := func(h *Handler) response {
		start := time.Now()
		res := do(h, next, get("/", "X-API-Key", "k"))
		if d := time.Since(start); d > bound {
			t.Errorf("a decision took %v with timeout %v, want under %v", d, timeout, bound)
		}
		return res
	}

	openBefore := decisions(name+"-open", "fail_open")
	for i := range 8 {
		if res := timed(hs["open"]); res.status != http.StatusOK {
			t.Errorf("open #%d: status %d, want 200", i+1, res.status)
		}
	}
	if got := decisions(name+"-open", "fail_open") - openBefore; got != 8 {
		t.Errorf("fail_open grew by %v, want 8", got)
	}

	closedBefore := decisions(name+"-closed", "fail_closed")
	for i := range 8 {
		res := timed(hs["closed"])
		if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") != "1" {
			t.Errorf("closed #%d: status %d Retry-After %q, want 503 and 1", i+1, res.status, res.header.Get("Retry-After"))
		}
	}
	if got := decisions(name+"-closed", "fail_closed") - closedBefore; got != 8 {
		t.Errorf("fail_closed grew by %v, want 8", got)
	}

	var statuses []int
	for range 5 {
		statuses = append(statuses, timed(hs["local"]).status)
	}
	want := []int{200, 200, 429, 429, 429}
	for i := range want {
		if statuses[i] != want[i] {
			t.Errorf("local: statuses %v, want %v (events/instances = 2)", statuses, want)
			break
		}
	}
	if got := decisions(name+"-local", "fallback"); got < 2 {
		t.Errorf("fallback = %v, want >= 2", got)
	}
	for mode, h := range hs {
		if s := h.breaker.state(); s != "open" {
			t.Errorf("%s: breaker %s after repeated failures, want open", mode, s)
		}
	}
}

// Acceptance 6 with Redis stopped, then restarted: the breaker recovers.
func TestHandlerFailureModesRedisStopped(t *testing.T) {
	srv := testenv.StartRedis(t)
	timeout := 100 * time.Millisecond
	hs := failureHandlers(t, srv.URL(), "stopped", timeout, false)
	next := new(statusHandler)
	for mode, h := range hs {
		if s := do(h, next, get("/", "X-API-Key", "k")).status; s != http.StatusOK {
			t.Fatalf("%s with Redis up: status %d, want 200", mode, s)
		}
	}

	srv.Stop()
	checkFailureModes(t, hs, "stopped", timeout)

	srv.Start()
	time.Sleep(breakerCooldown + 100*time.Millisecond)
	// The first request probes; Redis answers; the breaker closes.
	deadline := time.Now().Add(5 * time.Second)
	for {
		res := do(hs["closed"], next, get("/", "X-API-Key", "k"))
		if res.status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("closed handler still answers %d 5s after Redis came back", res.status)
		}
		time.Sleep(breakerCooldown / 4)
	}
	if s := hs["closed"].breaker.state(); s != "closed" {
		t.Errorf("breaker %s after a successful probe, want closed", s)
	}
	// Redis lost its data with the restart: the quota starts again.
	for range 3 {
		if s := do(hs["closed"], next, get("/", "X-API-Key", "k")).status; s != http.StatusOK {
			t.Errorf("after recovery: status %d, want 200", s)
		}
	}
}

// Acceptance 6 with a server that accepts and never answers.
func TestHandlerFailureModesStall(t *testing.T) {
	stall := testenv.StartStall(t)
	timeout := 50 * time.Millisecond
	hs := failureHandlers(t, "redis://"+stall.Addr(), "stall", timeout, true)
	checkFailureModes(t, hs, "stall", timeout)
}

func TestBreakerOpensAndProbes(t *testing.T) {
	c := newClock()
	fs := new(failingStore)
	h := &Handler{Zones: []*Zone{zone("brk", 10, time.Minute)}, OnError: "closed", store: fs, now: c.Now}
	logs := provision(t, h)
	next := new(statusHandler)
	status := func() int { return do(h, next, get("/")).status }

	for i := range breakerThreshold {
		if s := status(); s != http.StatusServiceUnavailable || fs.Calls() != i+1 {
			t.Fatalf("failure %d: status %d, store calls %d", i+1, s, fs.Calls())
		}
	}
	for range 20 {
		if s := status(); s != http.StatusServiceUnavailable {
			t.Fatalf("breaker open: status %d, want 503", s)
		}
	}
	if fs.Calls() != breakerThreshold {
		t.Fatalf("store called %d times with the breaker open, want %d", fs.Calls(), breakerThreshold)
	}

	// After the cooldown one probe goes through; it fails: open again.
	c.Add(breakerCooldown)
	status()
	status()
	if fs.Calls() != breakerThreshold+1 {
		t.Fatalf("store calls after cooldown = %d, want one probe (%d)", fs.Calls(), breakerThreshold+1)
	}

	// The store recovers: the next probe closes the breaker.
	c.Add(breakerCooldown)
	h.store = limiter.NewMemoryStore(c.Now, 0)
	if s := status(); s != http.StatusOK {
		t.Fatalf("probe to a working store: status %d, want 200", s)
	}
	if s := h.breaker.state(); s != "closed" {
		t.Errorf("breaker %s, want closed", s)
	}
	// The warnings were rate limited: one for the first failures, one a
	// second later for the failed probe.
	if n := logs.FilterMessage("rate limit store failed; on_error applies").Len(); n != 2 {
		t.Errorf("%d store failure warnings, want 2", n)
	}
}

// blockingStore blocks every decision until released, counting calls.
type blockingStore struct {
	mu      sync.Mutex
	calls   int
	release chan struct{}
}

func (s *blockingStore) Decide(ctx context.Context, asks []limiter.Ask) ([]limiter.Result, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	select {
	case <-s.release:
		return nil, context.DeadlineExceeded
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Once open, the breaker lets exactly one probe through however many
// requests arrive together.
func TestBreakerSingleProbe(t *testing.T) {
	c := newClock()
	fs := new(failingStore)
	h := &Handler{Zones: []*Zone{zone("probe", 10, time.Minute)}, store: fs, now: c.Now,
		Timeout: caddy.Duration(5 * time.Second)}
	provision(t, h)
	next := new(statusHandler)
	for range breakerThreshold {
		do(h, next, get("/"))
	}
	c.Add(breakerCooldown)
	bs := &blockingStore{release: make(chan struct{})}
	h.store = bs
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the probe, held by the store
		defer wg.Done()
		do(h, next, get("/"))
	}()
	for {
		bs.mu.Lock()
		n := bs.calls
		bs.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	counts := concurrently(t, 100, func(int) int { return do(h, next, get("/")).status })
	close(bs.release)
	wg.Wait()
	if bs.calls != 1 {
		t.Errorf("store calls while probing = %d, want 1", bs.calls)
	}
	if counts[http.StatusOK] != 100 { // on_error open
		t.Errorf("statuses while probing = %v, want all passed (open)", counts)
	}
}

// Zones of one request with different on_error each apply their own mode.
func TestHandlerMixedFailureModes(t *testing.T) {
	mk := func(name, mode string, events int64) *Zone {
		z := zone(name, events, time.Minute)
		z.OnError = mode
		return z
	}
	t.Run("closed wins", func(t *testing.T) {
		h := &Handler{Zones: []*Zone{mk("mx-open", "open", 5), mk("mx-local", "local", 5), mk("mx-closed", "closed", 5)},
			store: new(failingStore)}
		provision(t, h)
		res := do(h, new(statusHandler), get("/"))
		if res.status != http.StatusServiceUnavailable {
			t.Errorf("status %d, want 503", res.status)
		}
		if z, _ := res.repl.GetString("http.ratelimit.zone"); z != "mx-closed" {
			t.Errorf("{http.ratelimit.zone} = %q, want mx-closed", z)
		}
	})
	t.Run("open and local", func(t *testing.T) {
		h := &Handler{Zones: []*Zone{mk("mx2-open", "open", 1), mk("mx2-local", "local", 2)}, OnError: "closed",
			store: new(failingStore)}
		provision(t, h)
		openBefore := decisions("mx2-open", "fail_open")
		next := new(statusHandler)
		var statuses []int
		var last response
		for range 3 {
			last = do(h, next, get("/"))
			statuses = append(statuses, last.status)
		}
		if statuses[0] != 200 || statuses[1] != 200 || statuses[2] != 429 {
			t.Errorf("statuses %v, want [200 200 429]: open passes, local limits at 2", statuses)
		}
		if z, _ := last.repl.GetString("http.ratelimit.zone"); z != "mx2-local" {
			t.Errorf("refused by %q, want mx2-local", z)
		}
		if got := decisions("mx2-open", "fail_open") - openBefore; got != 2 {
			t.Errorf("fail_open grew by %v, want 2 (the refused request counts only the refusing zone)", got)
		}
		if got := last.header.Get("RateLimit-Policy"); got != `"mx2-local";q=2;w=60` {
			t.Errorf("RateLimit-Policy = %q, want only the zone that decided", got)
		}
	})
}

func TestFailOpenWarningsRateLimited(t *testing.T) {
	c := newClock()
	h := &Handler{Zones: []*Zone{zone("warn", 10, time.Minute)}, store: new(failingStore), now: c.Now}
	logs := provision(t, h)
	next := new(statusHandler)
	for range 20 {
		do(h, next, get("/"))
	}
	const msg = "rate limit store failed; on_error applies"
	if n := logs.FilterMessage(msg).Len(); n != 1 {
		t.Errorf("%d warnings for 20 failures within a second, want 1", n)
	}
	c.Add(warnEvery)
	do(h, next, get("/"))
	entries := logs.FilterMessage(msg).All()
	if len(entries) != 2 {
		t.Fatalf("%d warnings after a second, want 2", len(entries))
	}
	if got := entries[1].ContextMap()["suppressed"]; got != int64(19) {
		t.Errorf("suppressed = %v, want 19", got)
	}
}
