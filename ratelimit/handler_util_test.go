package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// provision provisions and validates h like Caddy does, with its logs
// observed, and cleans it up when the test ends.
func provision(t *testing.T, h *Handler) *observer.ObservedLogs {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	core, logs := observer.New(zap.DebugLevel)
	h.logger = zap.New(core)
	if err := h.Provision(ctx); err != nil {
		cancel()
		t.Fatalf("Provision: %v", err)
	}
	if err := h.Validate(); err != nil {
		cancel()
		t.Fatalf("Validate: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Cleanup(); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
		cancel()
	})
	return logs
}

// sharedRedis is the shared test Redis with a random key prefix, deleted
// when the test ends.
func sharedRedis(t *testing.T) *redispool.Config {
	t.Helper()
	_, prefix := testenv.Redis(t)
	return &redispool.Config{URL: testenv.RedisURL(t), KeyPrefix: prefix}
}

// statusHandler is the next handler: it answers with its status (200 by
// default) and counts the requests it saw.
type statusHandler struct {
	mu     sync.Mutex
	status int
	calls  int
	err    error // returned instead of writing, like basic_auth's 401
}

func (s *statusHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	s.mu.Lock()
	s.calls++
	status, err := s.status, s.err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte("ok"))
	return nil
}

func (s *statusHandler) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// response is what the client of one request saw.
type response struct {
	status int
	header http.Header
	repl   *caddy.Replacer
	err    error
}

// do serves one request through h as Caddy's server would prepare it, and
// turns a handler error into its status like Caddy's error handling.
func do(h *Handler, next caddyhttp.Handler, req *http.Request) response {
	rec := httptest.NewRecorder()
	repl := caddy.NewReplacer()
	req = caddyhttp.PrepareRequest(req, repl, rec, nil)
	err := h.ServeHTTP(rec, req, next)
	res := response{status: rec.Code, header: rec.Header(), repl: repl, err: err}
	var he caddyhttp.HandlerError
	if errors.As(err, &he) {
		res.status = he.StatusCode
	} else if err != nil {
		res.status = http.StatusInternalServerError
	}
	return res
}

// get builds a GET request for path with header pairs.
func get(path string, headers ...string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// concurrently sends n requests at once (one goroutine each) and returns
// how many got each status.
func concurrently(t *testing.T, n int, send func(i int) int) map[int]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s := send(i)
			mu.Lock()
			counts[s]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return counts
}

// clock is an injectable clock for the memory store and the breaker.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_800_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// decisions reads caddy_ratelimit_decisions_total for zone and outcome.
func decisions(zone, outcome string) float64 {
	var m dto.Metric
	if err := metrics.decisions.WithLabelValues(zone, outcome).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// failingStore fails every decision.
type failingStore struct {
	mu    sync.Mutex
	calls int
}

func (s *failingStore) Decide(ctx context.Context, asks []limiter.Ask) ([]limiter.Result, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return nil, errors.New("connection refused")
}

func (s *failingStore) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// zone is a token bucket zone keyed by the X-API-Key header.
func zone(name string, events int64, window time.Duration) *Zone {
	return &Zone{Name: name, Key: "{http.request.header.X-API-Key}", Events: events, Window: caddy.Duration(window)}
}

// barrierStore holds every decision until n have arrived, then lets them
// all reach the real store at once: the requests are truly concurrent at
// the store, however slowly the test machine starts their goroutines.
type barrierStore struct {
	limiter.Store
	wg *sync.WaitGroup
}

func newBarrier(n int) *sync.WaitGroup {
	wg := new(sync.WaitGroup)
	wg.Add(n)
	return wg
}

func (b barrierStore) Decide(ctx context.Context, asks []limiter.Ask) ([]limiter.Result, error) {
	b.wg.Done()
	b.wg.Wait()
	return b.Store.Decide(ctx, asks)
}

// spanStore records the store clock (limiter.Result.Now) of every decision.
type spanStore struct {
	limiter.Store
	rec *spanRecorder
}

func (s spanStore) Decide(ctx context.Context, asks []limiter.Ask) ([]limiter.Result, error) {
	res, err := s.Store.Decide(ctx, asks)
	for _, r := range res {
		s.rec.add(r.Now)
	}
	return res, err
}

type spanRecorder struct {
	mu            sync.Mutex
	first, latest time.Time
}

func (r *spanRecorder) add(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first.IsZero() || t.Before(r.first) {
		r.first = t
	}
	if t.After(r.latest) {
		r.latest = t
	}
}

// span is the store time between the first and the last decision.
func (r *spanRecorder) span() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest.Sub(r.first)
}

// allAlgorithms are the algorithms a zone may name.
var allAlgorithms = []string{limiter.TokenBucket, limiter.SlidingWindow, limiter.FixedWindow, limiter.SlidingLog, limiter.LeakyBucket}

// startSites starts one Caddy with globals and n sites of one handler
// config (site of each site's address; the first on Caddy's port): n
// instances sharing their store. It returns their ports.
func startSites(t *testing.T, n int, globals string, site func(addr string) string) (*caddytest.Tester, []int) {
	t.Helper()
	ports := make([]int, n)
	var sites strings.Builder
	for i := range ports {
		addr := "http://localhost:$PORT"
		if i > 0 {
			ports[i] = testenv.FreePort(t)
			addr = fmt.Sprintf("http://localhost:%d", ports[i])
		}
		sites.WriteString(site(addr))
	}
	tester, port := startCaddy(t, globals, sites.String())
	ports[0] = port
	return tester, ports
}

// startCaddy loads a Caddyfile into a real Caddy in this process, its
// admin API and HTTP port free ones: the global options block holds
// globals (extra lines), followed by sites, in which $PORT is the HTTP
// port. It returns the tester and the port.
func startCaddy(t *testing.T, globals, sites string) (*caddytest.Tester, int) {
	t.Helper()
	tester, port, _ := startCaddyAdmin(t, globals, sites)
	return tester, port
}

// startCaddyAdmin is startCaddy that also returns the admin API's port.
func startCaddyAdmin(t *testing.T, globals, sites string) (tester *caddytest.Tester, port, admin int) {
	t.Helper()
	admin, port = testenv.FreePort(t), testenv.FreePort(t)
	config := fmt.Sprintf("{\n\tadmin localhost:%d\n\thttp_port %d\n\thttps_port %d\n\tauto_https off\n\tskip_install_trust\n%s}\n\n",
		admin, port, testenv.FreePort(t), globals) + strings.ReplaceAll(sites, "$PORT", strconv.Itoa(port))
	tester = caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
		AdminPort:          admin,
		LoadRequestTimeout: 10 * time.Second,
		TestRequestTimeout: 10 * time.Second,
	})
	tester.InitServer(config, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return tester, port, admin
}
