package ratelimit

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// watchStore records every error of the store it wraps, and calls after
// once each decision is made.
type watchStore struct {
	limiter.Store
	mu    sync.Mutex
	errs  []error
	after func()
}

func (s *watchStore) Decide(ctx context.Context, asks []limiter.Ask) ([]limiter.Result, error) {
	res, err := s.Store.Decide(ctx, asks)
	s.mu.Lock()
	if err != nil {
		s.errs = append(s.errs, err)
	}
	after := s.after
	s.mu.Unlock()
	if after != nil {
		after()
	}
	return res, err
}

// hostileCase is one run of the request path on hostile input: a zone of
// algorithm alg whose events and burst come from request headers (a
// placeholder quota), whose plan row "p" holds plan*, and requests with
// the costs of the comma-separated costs, some carrying their key or plan
// key twice (dup's bits).
type hostileCase struct {
	alg                   uint8
	events, burst         string
	planEvents, planBurst int64
	planSeconds           float64
	costs                 string
	dup                   uint8
}

// FuzzHandlerHostileInput: whatever the cost, the placeholder quota, the
// plan row and the repeated headers, the handler never allows more units
// per key than the largest quota it was offered, and never reaches a
// store failure (the store never errs, the breaker stays closed); a key
// or plan key sent twice is always refused with 400.
func FuzzHandlerHostileInput(f *testing.F) {
	for _, c := range []hostileCase{
		{0, "3", "", 3, 0, 60, "1,1,1,1,2000000000000000", 0},
		{0, "3", "", 1 << 51, 0, 60, hugeCost + ",1,1,1,1", 1},
		{1, "10", "", 10, 0, 2e9, "99999999999999999999,5,5,5", 2},
		{2, "2251799813685248", "", 5, 0, math.NaN(), "1,1,1,1,1,1", 0},
		{3, "10001", "", 20000, 0, 60, "10000,1,1", 3},
		{4, "1", "3", 1, 100, 3600, "4,1,1,1,1,3,abc,-1", 0},
		{4, "10", "1125899906842624", 10, 0, 1, "1125899906842625,1", 0},
		{0, "5", "9223372036854775807", 5, -1, 0.0001, " 2 , 3,+1,0,0", 4},
		{1, "x", "", 7, 7, 7, "1,1,1,1,1,1,1,1", 7},
		{2, "3", "", 3, 0, 60, "1,99999999999999999999,99999999999999999999,1", 0},
	} {
		f.Add(c.alg, c.events, c.burst, c.planEvents, c.planBurst, c.planSeconds, c.costs, c.dup)
	}
	f.Fuzz(func(t *testing.T, alg uint8, events, burst string, planEvents, planBurst int64, planSeconds float64, costs string, dup uint8) {
		runHostile(t, hostileCase{alg, events, burst, planEvents, planBurst, planSeconds, costs, dup})
	})
}

func runHostile(t *testing.T, c hostileCase) {
	algorithm := allAlgorithms[int(c.alg)%len(allAlgorithms)]
	h, ws := hostileHandler(t, algorithm, c)
	// The largest capacity any source offers: an upper bound of what may
	// pass per key, whatever the handler picks.
	offered := max(capacityOf(algorithm, c.planEvents, c.planBurst), 0)
	if e, err := strconv.ParseInt(strings.TrimSpace(c.events), 10, 64); err == nil {
		b, _ := strconv.ParseInt(strings.TrimSpace(c.burst), 10, 64)
		offered = max(offered, capacityOf(algorithm, e, b))
	}
	allowed := map[string]int64{}
	next := new(statusHandler)
	for i, cost := range strings.SplitN(c.costs, ",", 24) {
		key := "a"
		if i%2 == 1 {
			key = "b"
		}
		twice := c.dup&1 != 0 && i%3 == 0 || c.dup&2 != 0 && key == "a" && i%4 == 0
		req := hostileRequest(key, cost, c, i)
		ctx, cancel := context.WithCancel(req.Context())
		ws.mu.Lock()
		ws.after = cancel // a leaky bucket's delay ends at once: 499, allowed
		ws.mu.Unlock()
		res := do(h, next, req.WithContext(ctx))
		cancel()
		switch {
		case twice && res.status != http.StatusBadRequest:
			t.Fatalf("request %d, key or plan key sent twice: status %d, want 400", i, res.status)
		case res.status == http.StatusOK || res.status == statusClientClosed:
			n, err := strconv.ParseInt(strings.TrimSpace(cost), 10, 64)
			if err != nil || n < 0 {
				t.Fatalf("request %d: cost %q allowed (status %d)", i, cost, res.status)
			}
			allowed[key] += n
		case res.status != http.StatusTooManyRequests && res.status != http.StatusBadRequest && res.status != http.StatusInternalServerError:
			t.Fatalf("request %d: status %d (%v)", i, res.status, res.err)
		}
	}
	for key, n := range allowed {
		if n > offered {
			t.Errorf("key %s: %d units allowed, more than any quota offered (%d)", key, n, offered)
		}
	}
	if len(ws.errs) > 0 {
		t.Errorf("store errors: %v", ws.errs)
	}
	if s := h.breaker.state(); s != "closed" {
		t.Errorf("breaker %s, want closed", s)
	}
}

// hostileHandler provisions the case's handler on a memory store with a
// frozen clock, its plans table holding the row "p" (skipped or not, as
// the loader reads it).
func hostileHandler(t *testing.T, algorithm string, c hostileCase) (*Handler, *watchStore) {
	clk := newClock()
	ws := &watchStore{Store: limiter.NewMemoryStore(clk.Now, 0)}
	z := &Zone{Name: "hostile", Key: "{http.request.header.X-Key}", Window: caddy.Duration(time.Hour), Algorithm: algorithm,
		Cost: "{http.request.header.X-Cost}", Dynamic: &DynamicQuota{Events: "{http.request.header.X-Events}"}}
	if c.burst != "" {
		z.Dynamic.Burst = "{http.request.header.X-Burst}"
	}
	h := &Handler{Zones: []*Zone{z}, Timeout: caddy.Duration(time.Minute), now: clk.Now}
	h.store = ws
	provision(t, h)
	table := &planTable{byKey: map[string]plan{}, skipped: map[string]struct{}{}}
	if p, err := planOf(algorithm, c.planEvents, c.planSeconds, c.planBurst, nil, nil); err != nil {
		table.skipped["p"] = struct{}{}
	} else {
		table.byKey["p"] = p
	}
	loader := &planLoader{algorithm: algorithm}
	loader.table.Store(table)
	q := z.quota
	q.planKey, q.plans = "{http.request.header.X-Plan}", &planHandle{planLoader: loader}
	q.prepare()
	z.once = appendFields(z.once, q.planKey)
	return h, ws
}

// hostileRequest is request i of case c for key ("a" names the plan).
func hostileRequest(key, cost string, c hostileCase, i int) *http.Request {
	r := get("/", "X-Key", key, "X-Cost", cost, "X-Events", c.events)
	if c.burst != "" {
		r.Header.Set("X-Burst", c.burst)
	}
	if key == "a" {
		r.Header.Set("X-Plan", "p")
	}
	if c.dup&1 != 0 && i%3 == 0 {
		r.Header["X-Key"] = dupValues(key, c.dup&4 != 0)
	}
	if c.dup&2 != 0 && key == "a" && i%4 == 0 {
		r.Header["X-Plan"] = dupValues("p", c.dup&8 != 0)
	}
	return r
}

// dupValues is v with another value, before or after it.
func dupValues(v string, before bool) []string {
	if before {
		return []string{"junk", v}
	}
	return []string{v, "junk"}
}

// capacityOf is the most units a key may take at once under algorithm
// with events and burst (0 when they offer nothing).
func capacityOf(algorithm string, events, burst int64) int64 {
	if events <= 0 || burst < 0 {
		return 0
	}
	switch {
	case algorithm == limiter.LeakyBucket:
		return min(burst, math.MaxInt64-1) + 1
	case algorithm == limiter.TokenBucket && burst > 0:
		return burst
	}
	return events
}
