package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// concZone is a concurrency zone keyed by the X-API-Key header.
func concZone(events int64, ttl time.Duration) *Zone {
	return &Zone{Name: "inflight", Key: "{http.request.header.X-API-Key}", Events: events,
		Algorithm: limiter.Concurrency, LeaseTTL: caddy.Duration(ttl)}
}

// concHandler is a handler of one concurrency zone on cfg (nil: in
// process), failing closed so that a store failure never lets a request
// through.
func concHandler(cfg *redispool.Config, events int64, ttl time.Duration) *Handler {
	return &Handler{Zones: []*Zone{concZone(events, ttl)}, Redis: cfg,
		Timeout: caddy.Duration(5 * time.Second), OnError: "closed"}
}

// inFlightBackend is the next handler: it counts the requests in flight
// and the most it ever saw at once, and holds each for hold, or until
// release is closed, or until its client is gone (neither: answers at
// once). marked: only requests with the header X-Hold are held.
type inFlightBackend struct {
	hold    time.Duration
	release chan struct{}
	marked  bool

	mu     sync.Mutex
	cur    int
	max    int
	served int
}

func (b *inFlightBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	b.mu.Lock()
	b.cur++
	b.max = max(b.max, b.cur)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.cur--
		b.served++
		b.mu.Unlock()
	}()
	if b.marked && r.Header.Get("X-Hold") == "" || b.hold == 0 && b.release == nil {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	var timeout <-chan time.Time
	if b.hold > 0 {
		t := time.NewTimer(b.hold)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
	case <-b.release:
	case <-r.Context().Done():
		return caddyhttp.Error(statusClientClosed, r.Context().Err())
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (b *inFlightBackend) stats() (cur, most, served int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur, b.max, b.served
}

// waitInFlight waits until b holds n requests.
func (b *inFlightBackend) waitInFlight(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if cur, _, _ := b.stats(); cur == n {
			return
		}
		if time.Now().After(deadline) {
			cur, _, _ := b.stats()
			t.Fatalf("backend holds %d requests, want %d", cur, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serve runs h in front of next on a real HTTP server, as Caddy would.
func serve(t *testing.T, h *Handler, next caddyhttp.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = caddyhttp.PrepareRequest(r, caddy.NewReplacer(), w, nil)
		if err := h.ServeHTTP(w, r, next); err != nil {
			status := http.StatusInternalServerError
			var he caddyhttp.HandlerError
			if errors.As(err, &he) {
				status = he.StatusCode
			}
			w.WriteHeader(status)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

var concClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

// send sends one request with key (and header pairs) to srv and returns
// its status.
func send(t *testing.T, ctx context.Context, srv *httptest.Server, key string, headers ...string) (int, http.Header) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	req.Header.Set("X-API-Key", key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := concClient.Do(req)
	if err != nil {
		return 0, nil // a client that gave up
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// untilAllowed sends requests with key to srv every 10ms until one is
// allowed and returns how long it took; the test fails after within.
func untilAllowed(t *testing.T, srv *httptest.Server, key string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if status, _ := send(t, context.Background(), srv, key); status == http.StatusOK {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("key %s still refused after %s", key, within)
	return 0
}

// concStores are the stores the acceptance tests run on: the shared
// Redis, and a 3-master Redis Cluster.
var concStores = []struct {
	name string
	cfg  func(t *testing.T) *redispool.Config
}{
	{"redis", sharedRedis},
	{"cluster", func(t *testing.T) *redispool.Config {
		_, prefix := testenv.RedisCluster(t)
		return &redispool.Config{Addresses: testenv.RedisClusterAddrs(t), KeyPrefix: prefix, PoolSize: 300}
	}},
}

// TestConcurrencyAcceptance: 200 clients send one-second requests of one
// key over three handler instances with events 10, retrying on 429 for
// 3.5 s: the backend never holds more than 10 at once, and holds 10.
func TestConcurrencyAcceptance(t *testing.T) {
	for _, st := range concStores {
		t.Run(st.name, func(t *testing.T) {
			cfg := st.cfg(t)
			backend := &inFlightBackend{hold: time.Second}
			var srvs []*httptest.Server
			for range 3 {
				h := concHandler(cfg, 10, time.Minute)
				provision(t, h)
				srvs = append(srvs, serve(t, h, backend))
			}
			key := "key-" + testenv.RandomID(4)
			deadline := time.Now().Add(3500 * time.Millisecond)
			var refused atomic.Int64
			var wg sync.WaitGroup
			for i := range 200 {
				wg.Go(func() {
					for time.Now().Before(deadline) {
						status, _ := send(t, context.Background(), srvs[i%3], key)
						if status == http.StatusOK {
							return
						}
						if status != http.StatusTooManyRequests {
							t.Errorf("status %d, want 200 or 429", status)
							return
						}
						refused.Add(1)
						time.Sleep(50 * time.Millisecond)
					}
				})
			}
			wg.Wait()
			_, most, served := backend.stats()
			t.Logf("served %d, most in flight %d, refusals %d", served, most, refused.Load())
			if most > 10 {
				t.Errorf("the backend held %d requests at once, want at most 10", most)
			}
			if most < 10 || served < 20 {
				t.Errorf("the backend held at most %d at once and served %d, want 10 and at least 20", most, served)
			}
		})
	}
}

// TestConcurrencyKilledInstance: an instance that dies mid-request (its
// refresher stops, its requests never end) frees its slots within
// lease_ttl, while a live instance's long request keeps its slot.
func TestConcurrencyKilledInstance(t *testing.T) {
	const ttl = 2 * time.Second // refreshed every ~0.77 s: slack for a loaded machine
	for _, st := range concStores {
		t.Run(st.name, func(t *testing.T) {
			cfg := st.cfg(t)
			killed := concHandler(cfg, 3, ttl)
			killed.refresher = newLeaseRefresher(leaseRefreshTick)
			provision(t, killed)
			live := concHandler(cfg, 3, ttl)
			provision(t, live)
			stuck := &inFlightBackend{release: make(chan struct{})}
			defer close(stuck.release) // the "dead" requests end with the test
			deadSrv := serve(t, killed, stuck)
			liveSrv := serve(t, live, &inFlightBackend{})
			key := "key-" + testenv.RandomID(4)
			for range 3 {
				go send(t, context.Background(), deadSrv, key)
			}
			stuck.waitInFlight(t, 3)
			time.Sleep(2 * ttl) // refreshed: the slots stay taken past lease_ttl
			if status, _ := send(t, context.Background(), liveSrv, key); status != http.StatusTooManyRequests {
				t.Fatalf("status %d with 3 of 3 slots held for 2×lease_ttl, want 429", status)
			}
			killed.refresher.stop()
			took := untilAllowed(t, liveSrv, key, 3*ttl)
			t.Logf("slots free %s after the instance died (lease_ttl %s)", took, ttl)
			if took > ttl+2*leaseRefreshTick+100*time.Millisecond {
				t.Errorf("slots free %s after the instance died, want within lease_ttl %s", took, ttl)
			}
		})
	}
}

// TestConcurrencyClientGone: a client that disconnects frees its slot at
// once.
func TestConcurrencyClientGone(t *testing.T) {
	for _, st := range concStores {
		t.Run(st.name, func(t *testing.T) {
			h := concHandler(st.cfg(t), 1, time.Minute)
			provision(t, h)
			backend := &inFlightBackend{release: make(chan struct{}), marked: true}
			defer close(backend.release)
			srv := serve(t, h, backend)
			key := "key-" + testenv.RandomID(4)
			ctx, cancel := context.WithCancel(context.Background())
			go send(t, ctx, srv, key, "X-Hold", "1")
			backend.waitInFlight(t, 1)
			if status, _ := send(t, context.Background(), srv, key); status != http.StatusTooManyRequests {
				t.Fatalf("status %d with the only slot held, want 429", status)
			}
			cancel()
			took := untilAllowed(t, srv, key, 5*time.Second)
			t.Logf("slot free %s after the client left", took)
			if took > 500*time.Millisecond {
				t.Errorf("slot free %s after the client left, want at once (< 500ms; lease_ttl 1m)", took)
			}
		})
	}
}

// TestConcurrencyHeaders: in process, the headers of a concurrency zone
// beside a token bucket while one request of the key is in flight.
func TestConcurrencyHeaders(t *testing.T) {
	h := &Handler{Zones: []*Zone{concZone(2, time.Minute), zone("api", 100, time.Minute)}}
	provision(t, h)
	backend := &inFlightBackend{release: make(chan struct{}), marked: true}
	srv := serve(t, h, backend)
	done := make(chan struct{})
	go func() {
		defer close(done)
		send(t, context.Background(), srv, "k", "X-Hold", "1")
	}()
	backend.waitInFlight(t, 1)
	status, hdr := send(t, context.Background(), srv, "k")
	if status != http.StatusOK {
		t.Fatalf("status %d with 1 of 2 slots held, want 200", status)
	}
	for name, want := range map[string]string{
		"RateLimit-Policy":      `"inflight";q=2;qu="concurrent-requests", "api";q=100;w=60`,
		"RateLimit":             `"inflight";r=0;t=0`,
		"X-RateLimit-Limit":     "2",
		"X-RateLimit-Remaining": "0",
	} {
		if got := hdr.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	hold := func() (int, http.Header) { return send(t, context.Background(), srv, "k", "X-Hold", "1") }
	go hold()
	backend.waitInFlight(t, 2)
	status, hdr = send(t, context.Background(), srv, "k")
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") != "1" || hdr.Get("RateLimit") != `"inflight";r=0;t=1` {
		t.Errorf("with 2 of 2 slots held: status %d, Retry-After %q, RateLimit %q; want 429, 1, \"inflight\";r=0;t=1",
			status, hdr.Get("Retry-After"), hdr.Get("RateLimit"))
	}
	close(backend.release)
	<-done
	backend.waitInFlight(t, 0)
	if status, hdr = send(t, context.Background(), srv, "k"); status != http.StatusOK || hdr.Get("X-RateLimit-Remaining") != "1" {
		t.Errorf("after both ended: status %d, remaining %q; want 200, 1", status, hdr.Get("X-RateLimit-Remaining"))
	}
}

// TestConcurrencyReload: a handler cleaned up by a config reload while a
// request holds a lease keeps refreshing it (and keeps its Redis client)
// until the request ends: the slot stays taken past lease_ttl, then is
// given back.
func TestConcurrencyReload(t *testing.T) {
	cfg := sharedRedis(t)
	cfg.PoolSize = 7 // a client of its own, closed when no config uses it
	const ttl = 2 * time.Second
	old := concHandler(cfg, 1, ttl)
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := old.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	backend := &inFlightBackend{release: make(chan struct{}), marked: true}
	release := sync.OnceFunc(func() { close(backend.release) })
	defer release()
	srv := serve(t, old, backend)
	key := "key-" + testenv.RandomID(4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		send(t, context.Background(), srv, key, "X-Hold", "1")
	}()
	backend.waitInFlight(t, 1)
	if err := old.Cleanup(); err != nil { // the reload
		t.Fatal(err)
	}
	next := concHandler(&redispool.Config{URL: testenv.RedisURL(t), KeyPrefix: cfg.KeyPrefix}, 1, ttl)
	provision(t, next)
	nextSrv := serve(t, next, &inFlightBackend{})
	time.Sleep(ttl * 5 / 2)
	if status, _ := send(t, context.Background(), nextSrv, key); status != http.StatusTooManyRequests {
		t.Fatalf("status %d 2.5×lease_ttl after the reload, want 429 (the old request holds the slot)", status)
	}
	release()
	<-done
	if took := untilAllowed(t, nextSrv, key, 5*time.Second); took > 500*time.Millisecond {
		t.Errorf("slot free %s after the old request ended, want at once", took)
	}
}

// TestConcurrencyValidateJSON: JSON gets the Caddyfile's rules.
func TestConcurrencyValidateJSON(t *testing.T) {
	for _, z := range []*Zone{
		{Name: "c", Key: "k", Events: 2, Algorithm: limiter.Concurrency, Approximate: caddy.Duration(time.Second)},
		{Name: "c", Key: "k", Events: 2, Algorithm: limiter.Concurrency, CountStatus: []int{401}},
		{Name: "c", Key: "k", Events: 2, Algorithm: limiter.Concurrency, LeaseTTL: caddy.Duration(time.Millisecond)},
	} {
		if err := (&Handler{Zones: []*Zone{z}}).Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", z)
		}
	}
	if err := (&Handler{Zones: []*Zone{concZone(2, 0)}}).Validate(); err != nil {
		t.Errorf("Validate(concurrency zone, default lease_ttl) = %v", err)
	}
}

// panicking is a next handler that panics, as a buggy module would.
type panicking struct{}

func (panicking) ServeHTTP(http.ResponseWriter, *http.Request) error { panic("next handler bug") }

// TestConcurrencyEndings: whatever way the next handler ends (an error, a
// panic), the slot is given back by the time the handler returns.
func TestConcurrencyEndings(t *testing.T) {
	h := &Handler{Zones: []*Zone{concZone(1, time.Minute)}}
	provision(t, h)
	failing := &statusHandler{err: caddyhttp.Error(http.StatusBadGateway, errors.New("upstream timeout"))}
	for _, tc := range []struct {
		name string
		next caddyhttp.Handler
	}{
		{"error", failing},
		{"panic", panicking{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			func() {
				defer func() { _ = recover() }()
				do(h, tc.next, get("/", "X-API-Key", "k"))
			}()
			if res := do(h, new(statusHandler), get("/", "X-API-Key", "k")); res.status != http.StatusOK {
				t.Errorf("after a request ended by %s: status %d, want 200 (slot given back)", tc.name, res.status)
			}
		})
	}
}

// TestConcurrencyAdmin: the admin API lists a concurrency zone and reads
// a key's free slots without taking one.
func TestConcurrencyAdmin(t *testing.T) {
	z := concZone(2, time.Minute)
	z.Name = "inflight_" + testenv.RandomID(3)
	h := &Handler{Zones: []*Zone{z}}
	provision(t, h)
	backend := &inFlightBackend{release: make(chan struct{}), marked: true}
	release := sync.OnceFunc(func() { close(backend.release) })
	defer release()
	done := make(chan struct{})
	go func() {
		defer close(done)
		do(h, backend, get("/", "X-API-Key", "k", "X-Hold", "1"))
	}()
	backend.waitInFlight(t, 1)
	admin := func(method, path string) string {
		rec := httptest.NewRecorder()
		if err := (AdminAPI{}).serve(rec, httptest.NewRequest(method, path, nil)); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return rec.Body.String()
	}
	if body := admin("GET", "/ratelimit/zones"); !strings.Contains(body, `"algorithm":"concurrency"`) {
		t.Errorf("zones = %s, want the concurrency zone", body)
	}
	for range 2 { // reading takes no slot
		body := admin("GET", "/ratelimit/zones/"+z.Name+"/keys/k")
		if !strings.Contains(body, `"remaining":1`) || !strings.Contains(body, `"allowed":true`) {
			t.Errorf("key state = %s, want 1 slot free, allowed", body)
		}
	}
	release()
	<-done
	if body := admin("GET", "/ratelimit/zones/"+z.Name+"/keys/k"); !strings.Contains(body, `"remaining":2`) {
		t.Errorf("key state after the request ended = %s, want 2 slots free", body)
	}
}
