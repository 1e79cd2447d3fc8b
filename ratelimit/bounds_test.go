package ratelimit

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// counterValue reads a counter.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// hugeCost is past the stores' old 2^50 bound (issue 13's reproduction).
const hugeCost = "2000000000000000"

// A cost past what the zone can ever grant, sent by a client through
// `cost {http.request.header.X-Cost}`, is refused like any refusal, on the
// memory store and on Redis: nothing charged, no store failure, the
// breaker stays closed and other keys stay limited.
func TestHugeCostRefused(t *testing.T) {
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			h := &Handler{Zones: []*Zone{{Name: "cost", Key: "{http.request.header.X-API-Key}", Events: 3,
				Window: caddy.Duration(time.Minute), Cost: "{http.request.header.X-Cost}"}}}
			if store == "redis" {
				// A generous timeout: a loaded machine's slow round trip
				// would be a store failure, which this test counts.
				h.Redis, h.Timeout = sharedRedis(t), caddy.Duration(time.Second)
			}
			provision(t, h)
			next := new(statusHandler)
			send := func(key, cost string) response {
				return do(h, next, get("/", "X-API-Key", key, "X-Cost", cost))
			}
			errs0 := counterValue(metrics.storeErrors)
			over := h.Zones[0].inputs[inputCostOverQuota]
			over0 := counterValue(over)

			for i := range 3 {
				if s := send("k1", "1").status; s != http.StatusOK {
					t.Fatalf("k1 request %d: status %d, want 200", i+1, s)
				}
			}
			if s := send("k1", "1").status; s != http.StatusTooManyRequests {
				t.Fatalf("k1 exhausted: status %d, want 429", s)
			}
			if s := send("k1", hugeCost).status; s != http.StatusTooManyRequests {
				t.Errorf("k1 exhausted, cost %s: status %d, want 429", hugeCost, s)
			}
			// A fresh key: refused as any refusal, with the zone's headers.
			for i := range 10 {
				res := send("k2", hugeCost)
				if res.status != http.StatusTooManyRequests {
					t.Fatalf("k2 cost %s, request %d: status %d, want 429", hugeCost, i+1, res.status)
				}
				if got := res.header.Get("Retry-After"); got != "60" {
					t.Errorf("k2 cost %s: Retry-After %q, want 60 (never: one window)", hugeCost, got)
				}
				if got := res.header.Get("X-RateLimit-Remaining"); got != "3" {
					t.Errorf("k2 cost %s: X-RateLimit-Remaining %q, want 3 (nothing charged)", hugeCost, got)
				}
			}
			for i := range 3 {
				if s := send("k2", "1").status; s != http.StatusOK {
					t.Errorf("k2 after the refusals, request %d: status %d, want 200 (nothing charged)", i+1, s)
				}
			}
			// Past int64 is a huge cost too; not a number is a 400.
			for cost, want := range map[string]int{
				"99999999999999999999":  http.StatusTooManyRequests,
				"4":                     http.StatusTooManyRequests,
				"abc":                   http.StatusBadRequest,
				"-1":                    http.StatusBadRequest,
				"-99999999999999999999": http.StatusBadRequest,
			} {
				if s := send("k4", cost).status; s != want {
					t.Errorf("cost %q: status %d, want %d", cost, s, want)
				}
			}
			// No store failure: the breaker is closed, other keys limited.
			allowed := 0
			for range 10 {
				if send("k3", "1").status == http.StatusOK {
					allowed++
				}
			}
			if allowed != 3 {
				t.Errorf("k3 after the huge costs: %d of 10 allowed, want 3", allowed)
			}
			if d := counterValue(metrics.storeErrors) - errs0; d != 0 {
				t.Errorf("store_errors_total grew by %v, want 0", d)
			}
			if s := h.breaker.state(); s != "closed" {
				t.Errorf("breaker %s, want closed", s)
			}
			if d := counterValue(over) - over0; d != 13 {
				t.Errorf("invalid_input_total{kind=cost_over_quota} grew by %v, want 13", d)
			}
		})
	}
}

// A count_status zone checks a cost it can never grant at once, rather
// than charging it after the response.
func TestHugeCostRefusedCountStatus(t *testing.T) {
	h := &Handler{Zones: []*Zone{{Name: "login", Key: "{http.request.header.X-API-Key}", Events: 3,
		Window: caddy.Duration(time.Minute), Cost: "{http.request.header.X-Cost}", CountStatus: []int{401}}}}
	provision(t, h)
	next := &statusHandler{status: http.StatusUnauthorized}
	if s := do(h, next, get("/", "X-API-Key", "k", "X-Cost", hugeCost)).status; s != http.StatusTooManyRequests {
		t.Errorf("status %d, want 429", s)
	}
	if next.Calls() != 0 {
		t.Errorf("the request went on (%d calls), want refused first", next.Calls())
	}
}

// The cost is compared with the quota before the brake: under a brake, a
// cost the zone could grant unbraked is an ordinary refusal (not counted
// as an invalid input), one past it is asked as MaxCost+1.
func TestZoneDecisionCostUnderBrake(t *testing.T) {
	h := &Handler{Zones: []*Zone{{Name: "braked", Key: "k", Events: 10, Window: caddy.Duration(time.Minute),
		Algorithm: limiter.LeakyBucket, Burst: 5, Cost: "{http.request.header.X-Cost}"}}}
	provision(t, h)
	z := h.Zones[0]
	over := z.inputs[inputCostOverQuota]
	for _, tt := range []struct {
		cost     string
		wantCost int64
		counted  bool
	}{
		{"6", 6, false}, // burst + 1: grantable unbraked
		{"7", 7, true},
		{hugeCost, 7, true},
	} {
		before := counterValue(over)
		req := get("/", "X-Cost", tt.cost)
		d, err := h.zoneDecisionFor(z, req, caddy.NewReplacer(), 0.5)
		if err != nil {
			t.Fatalf("cost %s: %v", tt.cost, err)
		}
		if d.ask.Cost != tt.wantCost || d.ask.Limit.Events != 5 || d.ask.Limit.Burst != 5 {
			t.Errorf("cost %s: ask cost %d, limit %+v; want cost %d under events 5, burst 5", tt.cost, d.ask.Cost, d.ask.Limit, tt.wantCost)
		}
		if counted := counterValue(over) > before; counted != tt.counted {
			t.Errorf("cost %s: counted as over the quota = %v, want %v", tt.cost, counted, tt.counted)
		}
	}
}

// A store refusing an Ask out of its bounds says so with limiter.ErrInvalidAsk,
// which is not a store failure: no store error counted, breaker closed.
func TestInvalidAskNotAStoreFailure(t *testing.T) {
	h := &Handler{Redis: sharedRedis(t), Zones: []*Zone{zone("def", 3, time.Minute)}}
	provision(t, h)
	ask := limiter.Ask{Key: limiter.StoreKey(h.prefix, "def", "", "k"), Limit: limiter.Limit{Algorithm: limiter.TokenBucket, Events: 3, Window: time.Minute}, Cost: 1 << 52}
	errs0 := counterValue(metrics.storeErrors)
	for range 10 {
		_, err := h.callStore(context.Background(), []limiter.Ask{ask}, time.Now())
		if !errors.Is(err, limiter.ErrInvalidAsk) {
			t.Fatalf("callStore(cost 2^52) = %v, want limiter.ErrInvalidAsk", err)
		}
	}
	if d := counterValue(metrics.storeErrors) - errs0; d != 0 {
		t.Errorf("store_errors_total grew by %v, want 0", d)
	}
	if s := h.breaker.state(); s != "closed" {
		t.Errorf("breaker %s, want closed", s)
	}
	if _, err := limiter.NewMemoryStore(nil, 0).Decide(context.Background(), []limiter.Ask{ask}); !errors.Is(err, limiter.ErrInvalidAsk) {
		t.Errorf("memory store: %v, want limiter.ErrInvalidAsk", err)
	}
}

// Static values past the bounds refuse to load: the Caddyfile with the
// line, JSON in Validate naming the zone and the field.
func TestStaticBoundsRefuseToLoad(t *testing.T) {
	for _, tt := range []struct {
		name, body, err string
		line            int
	}{
		{"events 2^51", "events 2251799813685248\nwindow 1m", "events 2251799813685248: must be at most 2^50", 4},
		{"burst 2^51", "events 10\nwindow 1m\nburst 2251799813685248", "burst 2251799813685248: must be at most 2^50", 6},
		{"window 100000h", "events 10\nwindow 100000h", "window 100000h0m0s: must be at least 1ms and at most 87600h0m0s", 5},
		{"cost past int64", "events 10\nwindow 1m\ncost 99999999999999999999", "cost 99999999999999999999: must be at most 2^50", 6},
		{"cost past the quota", "events 10\nwindow 1m\ncost 11", "cost 11: more than the zone can ever grant (10)", 7},
		{"refill", "events 1\nwindow 1h\nburst 100000", "the bucket refills in 100000h0m0s", 7},
		{"queue", "events 1\nwindow 1h\nburst 25\nalgorithm leaky_bucket", "the queue's longest wait is 25h0m0s", 8},
		{"sliding log", "events 10001\nwindow 1h\nalgorithm sliding_log", "sliding_log keeps one entry per unit, must be at most 10000", 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			input := "ratelimit {\nzone api {\nkey {client_ip}\n" + tt.body + "\n}\n}"
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "Testfile:"+strconv.Itoa(tt.line)) {
				t.Errorf("UnmarshalCaddyfile:\n%s\nerror = %v, want %q at Testfile:%d", input, err, tt.err, tt.line)
			}
		})
	}
	for _, tt := range []struct {
		name string
		z    Zone
		err  string
	}{
		{"events 2^51", Zone{Events: 1 << 51, Window: caddy.Duration(time.Minute)}, `zone "api": events 2251799813685248: must be at most 2^50`},
		{"burst 2^51", Zone{Events: 1, Burst: 1 << 51, Window: caddy.Duration(time.Minute)}, `zone "api": burst 2251799813685248: must be at most 2^50`},
		{"window 2e9s", Zone{Events: 1, Window: caddy.Duration(2e9 * time.Second)}, `zone "api": window 555555h33m20s: must be at least 1ms`},
		{"cost 2^51", Zone{Events: 1, Window: caddy.Duration(time.Minute), Cost: "2251799813685248"}, `zone "api": cost 2251799813685248: must be at most 2^50`},
		{"sliding log", Zone{Events: 20000, Window: caddy.Duration(time.Minute), Algorithm: limiter.SlidingLog}, `zone "api": events 20000: sliding_log`},
		{"dynamic events, static burst", Zone{Burst: 1 << 51, Window: caddy.Duration(time.Minute), Dynamic: &DynamicQuota{Events: "{e}"}}, "burst 2251799813685248: must be at most 2^50"},
	} {
		t.Run("json/"+tt.name, func(t *testing.T) {
			z := tt.z
			z.Name, z.Key = "api", "{client_ip}"
			h := &Handler{Zones: []*Zone{&z}}
			if err := h.Validate(); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Validate() = %v, want %q", err, tt.err)
			}
		})
	}
}

// The bounds as one table: at the edge, and one past it.
func TestCheckLimit(t *testing.T) {
	const day = 24 * time.Hour
	for _, tt := range []struct {
		l  limiter.Limit
		ok bool
	}{
		{limiter.Limit{Algorithm: limiter.TokenBucket, Events: limiter.MaxEvents, Window: time.Millisecond}, true},
		{limiter.Limit{Algorithm: limiter.TokenBucket, Events: limiter.MaxEvents + 1, Window: time.Millisecond}, false},
		{limiter.Limit{Algorithm: limiter.FixedWindow, Events: 1, Window: limiter.MaxWindow}, true},
		{limiter.Limit{Algorithm: limiter.FixedWindow, Events: 1, Window: limiter.MaxWindow + time.Millisecond}, false},
		{limiter.Limit{Algorithm: limiter.FixedWindow, Events: 1, Window: time.Millisecond - 1}, false},
		{limiter.Limit{Algorithm: limiter.TokenBucket, Events: 1, Burst: 3650, Window: day}, true},
		{limiter.Limit{Algorithm: limiter.TokenBucket, Events: 1, Burst: 3651, Window: day}, false},
		{limiter.Limit{Algorithm: limiter.TokenBucket, Events: limiter.MaxEvents, Burst: limiter.MaxEvents, Window: limiter.MaxWindow}, true},
		{limiter.Limit{Algorithm: limiter.LeakyBucket, Events: 1, Burst: 24, Window: time.Hour}, true},
		{limiter.Limit{Algorithm: limiter.LeakyBucket, Events: 1, Burst: 25, Window: time.Hour}, false},
		{limiter.Limit{Algorithm: limiter.LeakyBucket, Events: 1, Burst: 0, Window: limiter.MaxWindow}, true},
		{limiter.Limit{Algorithm: limiter.SlidingLog, Events: limiter.MaxSlidingLogEvents, Window: time.Hour}, true},
		{limiter.Limit{Algorithm: limiter.SlidingLog, Events: limiter.MaxSlidingLogEvents + 1, Window: time.Hour}, false},
		{limiter.Limit{Algorithm: limiter.SlidingWindow, Events: 0, Window: time.Hour}, false},
		{limiter.Limit{Algorithm: "nope", Events: 1, Window: time.Hour}, false},
	} {
		if err := limiter.CheckLimit(tt.l); (err == nil) != tt.ok {
			t.Errorf("CheckLimit(%+v) = %v, want ok %v", tt.l, err, tt.ok)
		}
	}
}

// Whatever passes limiter.CheckLimit, under any brake within its bounds and any
// cost up to MaxCost+1, passes the stores' own check: the handler never
// sends an Ask a store refuses.
func TestBoundsWithinStoreBounds(t *testing.T) {
	edges := []int64{1, 2, 3, 999, 1000, 1001, limiter.MaxSlidingLogEvents, 1 << 20, limiter.MaxEvents - 1, limiter.MaxEvents}
	windows := []time.Duration{time.Millisecond, time.Second, time.Hour, 24 * time.Hour, limiter.MaxWindow}
	factors := []float64{1, 0.5, 0.01, MinBrakeFactor}
	n := 0
	for _, alg := range allAlgorithms {
		for _, events := range edges {
			for _, burst := range append([]int64{0}, edges...) {
				for _, w := range windows {
					l := limiter.Limit{Algorithm: alg, Events: events, Burst: burst, Window: w}
					if limiter.CheckLimit(l) != nil {
						continue
					}
					for _, f := range factors {
						bl := l
						if f < 1 {
							bl = braked(l, f)
						}
						for _, lim := range []limiter.Limit{bl, localLimit(bl, 3)} {
							a := limiter.Ask{Key: "k", Limit: lim, Cost: l.MaxCost() + 1}
							if _, err := limiter.NewMemoryStore(nil, 0).Decide(context.Background(), []limiter.Ask{a}); err != nil {
								t.Errorf("limit %+v, brake %v: %v", l, f, err)
							}
							n++
						}
					}
				}
			}
		}
	}
	t.Logf("%d limits checked", n)
}

func TestParseCost(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {" 7 ", 7, true}, {"+3", 3, true}, {hugeCost, 2000000000000000, true},
		{"99999999999999999999", math.MaxInt64, true}, {"-1", 0, false}, {"-99999999999999999999", 0, false},
		{"", 0, false}, {"1.5", 0, false}, {"1,2", 0, false}, {"0x10", 0, false},
	} {
		got, err := parseCost(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseCost(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// A placeholder quota past the bounds is a 500 for that request, counted.
func TestDynamicQuotaPastBounds(t *testing.T) {
	h := &Handler{Zones: []*Zone{{Name: "dyn", Key: "{http.request.header.X-API-Key}", Algorithm: limiter.SlidingLog,
		Dynamic: &DynamicQuota{Events: "{http.request.header.X-Events}", Window: "{http.request.header.X-Window}"}}}}
	provision(t, h)
	counted := h.Zones[0].inputs[inputQuota]
	for _, tt := range []struct {
		events, window string
		want           int
	}{
		{"10", "1m", http.StatusOK},
		{"2251799813685248", "1m", http.StatusInternalServerError},
		{"10001", "1m", http.StatusInternalServerError}, // sliding_log
		{"10", "100000h", http.StatusInternalServerError},
		{"10", "1us", http.StatusInternalServerError},
	} {
		before := counterValue(counted)
		res := do(h, new(statusHandler), get("/", "X-API-Key", "k", "X-Events", tt.events, "X-Window", tt.window))
		if res.status != tt.want {
			t.Errorf("events %s, window %s: status %d, want %d", tt.events, tt.window, res.status, tt.want)
		}
		if grew := counterValue(counted) > before; grew != (tt.want != http.StatusOK) {
			t.Errorf("events %s, window %s: counted %v", tt.events, tt.window, grew)
		}
	}
}

// The brake's factor and TTL are bounded, in the admin API too (a 4xx
// JSON error naming the field), and a value out of bounds in Redis is
// ignored.
func TestBrakeBounds(t *testing.T) {
	for _, tt := range []struct {
		f   float64
		ttl time.Duration
		err string
	}{
		{MinBrakeFactor, MaxBrakeTTL, ""},
		{5e-324, time.Minute, "invalid brake factor 5e-324: must be at least 0.001"},
		{0.0009, time.Minute, "invalid brake factor"},
		{0.5, 100000 * time.Hour, "invalid brake ttl 100000h0m0s: must be positive and at most 24h0m0s"},
		{0.5, MaxBrakeTTL + time.Second, "invalid brake ttl"},
	} {
		err := checkBrake(tt.f, tt.ttl)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("checkBrake(%v, %v) = %v, want %q", tt.f, tt.ttl, err, tt.err)
		}
	}
	for _, tt := range []struct{ body, field string }{
		{`{"factor": 5e-324}`, "factor"},
		{`{"factor": 0.5, "ttl": "100000h"}`, "ttl"},
	} {
		req := httptest.NewRequest(http.MethodPut, "/ratelimit/brake", strings.NewReader(tt.body))
		err := AdminAPI{}.serve(httptest.NewRecorder(), req)
		var ae caddy.APIError
		if !errors.As(err, &ae) || ae.HTTPStatus != http.StatusBadRequest || !strings.Contains(ae.Err.Error(), "brake "+tt.field) {
			t.Errorf("PUT %s = %v, want 400 naming %s (Caddy writes it as {\"error\": ...})", tt.body, err, tt.field)
		}
	}
	c, prefix := testenv.Redis(t)
	c.Set(context.Background(), prefix+":brake", "5e-324", time.Minute)
	if f, err := newRedisBrake(c, prefix).get(context.Background()); err == nil || f != 1 {
		t.Errorf("get() of brake 5e-324 = %v, %v; want 1 and an error", f, err)
	}
}

// At the edges of the bounds, under the strongest brake, the Redis script
// decides without error (every TTL an integer Redis accepts) and agrees
// with the memory store on a first request and on one past the quota.
func TestRedisDecidesAtTheBounds(t *testing.T) {
	c, prefix := testenv.Redis(t)
	rs := limiter.NewRedisStore(c)
	ms := limiter.NewMemoryStore(nil, 0)
	limits := []limiter.Limit{
		{Algorithm: limiter.TokenBucket, Events: limiter.MaxEvents, Window: limiter.MaxWindow},
		{Algorithm: limiter.TokenBucket, Events: 1, Burst: 3650, Window: 24 * time.Hour},
		{Algorithm: limiter.TokenBucket, Events: limiter.MaxEvents, Burst: limiter.MaxEvents, Window: time.Millisecond},
		{Algorithm: limiter.SlidingWindow, Events: limiter.MaxEvents, Window: limiter.MaxWindow},
		{Algorithm: limiter.FixedWindow, Events: limiter.MaxEvents, Window: limiter.MaxWindow},
		{Algorithm: limiter.SlidingLog, Events: limiter.MaxSlidingLogEvents, Window: limiter.MaxWindow},
		{Algorithm: limiter.LeakyBucket, Events: 1, Burst: 24, Window: time.Hour},
		{Algorithm: limiter.LeakyBucket, Events: limiter.MaxEvents, Burst: limiter.MaxEvents, Window: 24 * time.Hour},
		{Algorithm: limiter.LeakyBucket, Events: 1, Window: limiter.MaxWindow},
	}
	for i, l := range limits {
		if err := limiter.CheckLimit(l); err != nil {
			t.Fatalf("limit %d: %v", i, err)
		}
		for _, f := range []float64{1, MinBrakeFactor} {
			bl := l
			if f < 1 {
				bl = braked(l, f)
			}
			for _, cost := range []int64{1, l.MaxCost() + 1} {
				key := limiter.StoreKey(prefix, "edge", "", strconv.Itoa(i)+"/"+strconv.FormatFloat(f, 'g', -1, 64)+"/"+strconv.FormatInt(cost, 10))
				a := limiter.Ask{Key: key, Limit: bl, Cost: cost}
				rr, err := rs.Decide(context.Background(), []limiter.Ask{a})
				if err != nil {
					t.Errorf("redis, limit %+v, cost %d: %v", bl, cost, err)
					continue
				}
				mr, err := ms.Decide(context.Background(), []limiter.Ask{a})
				if err != nil {
					t.Fatalf("memory, limit %+v, cost %d: %v", bl, cost, err)
				}
				if rr[0].Allowed != mr[0].Allowed || rr[0].Allowed != (cost == 1) {
					t.Errorf("limit %+v, cost %d: redis allowed %v, memory %v", bl, cost, rr[0].Allowed, mr[0].Allowed)
				}
				if cost == 1 && c.PTTL(context.Background(), key).Val() <= 0 {
					t.Errorf("limit %+v: key without a TTL", bl)
				}
			}
		}
	}
}
