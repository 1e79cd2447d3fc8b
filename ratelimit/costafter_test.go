package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// usageBackend is the next handler of cost_after tests: it answers 200 (or
// status) with the real cost cost(i) of its i-th request in the header
// X-Tokens-Used, or as a trailer after its body (trailer), and sums what
// it reported.
type usageBackend struct {
	cost    func(i int64) string
	status  int
	trailer bool
	n       atomic.Int64
	total   atomic.Int64
}

func (b *usageBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	v := b.cost(b.n.Add(1) - 1)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		b.total.Add(n)
	}
	if b.trailer {
		w.Header().Set("Trailer", "X-Tokens-Used")
	} else {
		w.Header().Set("X-Tokens-Used", v)
	}
	w.WriteHeader(cmpOr(b.status, http.StatusOK))
	_, _ = w.Write([]byte("answer"))
	if b.trailer {
		w.Header().Set("X-Tokens-Used", v)
	}
	return nil
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// clientGone is a next handler whose client hangs up mid-response.
type clientGone struct{ cancel context.CancelFunc }

func (c clientGone) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	w.WriteHeader(http.StatusOK)
	c.cancel()
	<-r.Context().Done()
	return caddyhttp.Error(statusClientClosed, r.Context().Err())
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fixedUsage reports v for every request.
func fixedUsage(v string) func(int64) string { return func(int64) string { return v } }

// tokenZone is a zone of events per window keyed by X-API-Key whose real
// cost is the response's X-Tokens-Used.
func tokenZone(alg string, events int64, window time.Duration) *Zone {
	return &Zone{Name: "tokens", Key: "{http.request.header.X-API-Key}", Events: events,
		Window: caddy.Duration(window), Algorithm: alg,
		CostAfter: &CostAfter{Template: "{http.response.header.X-Tokens-Used}"}}
}

// costAfterHandler is a handler of zones with legacy headers (for
// X-RateLimit-Remaining), on cfg (nil: in process).
func costAfterHandler(cfg *redispool.Config, zones ...*Zone) *Handler {
	return &Handler{Zones: zones, Redis: cfg, Headers: "legacy", Timeout: caddy.Duration(5 * time.Second), OnError: "closed"}
}

// remaining is what a cost 0 check sees left of key in zone z of h (a
// request admitted at cost 1 and settled at 0).
func remaining(t *testing.T, h *Handler, key string) int64 {
	t.Helper()
	b := &usageBackend{cost: fixedUsage("0")}
	res := do(h, b, get("/", "X-API-Key", key))
	if res.status != http.StatusOK {
		return -1
	}
	n, err := strconv.ParseInt(res.header.Get("X-RateLimit-Remaining"), 10, 64)
	if err != nil {
		t.Fatalf("X-RateLimit-Remaining %q: %v", res.header.Get("X-RateLimit-Remaining"), err)
	}
	return n + 1 // its own pre-charge, given back
}

// TestCostAfterSettles: the real cost read from a header or a trailer is
// charged; an invalid one is charged the fallback (the zone's cost) and
// counted; one
// that never arrives (handler error, panic, client gone) is charged the
// fallback; count_status settles only statuses that count.
func TestCostAfterSettles(t *testing.T) {
	for _, alg := range []string{limiter.TokenBucket, limiter.SlidingWindow, limiter.FixedWindow} {
		t.Run(alg, func(t *testing.T) {
			z := tokenZone(alg, 1000, time.Hour)
			h := costAfterHandler(nil, z)
			provision(t, h)
			serveKey := func(key string, next caddyhttp.Handler) {
				t.Helper()
				func() {
					defer func() { _ = recover() }()
					do(h, next, get("/", "X-API-Key", key))
				}()
			}
			cases := []struct {
				name string
				next caddyhttp.Handler
				want int64 // units left after
			}{
				{"header", &usageBackend{cost: fixedUsage("100")}, 900},
				{"trailer", &usageBackend{cost: fixedUsage("250"), trailer: true}, 750},
				{"zero refunds", &usageBackend{cost: fixedUsage("0")}, 1000},
				{"invalid", &usageBackend{cost: fixedUsage("12abc")}, 999},
				{"negative", &usageBackend{cost: fixedUsage("-40")}, 999},
				{"two values", &usageBackend{cost: fixedUsage("5, 6")}, 999},
				{"past 2^50", &usageBackend{cost: fixedUsage("1125899906842625")}, 999},
				{"absent", &usageBackend{cost: fixedUsage("")}, 999},
				{"handler error", &statusHandler{err: caddyhttp.Error(http.StatusBadGateway, errors.New("upstream down"))}, 999},
				{"panic", panicking{}, 999},
			}
			before := counterValue(z.inputs[inputCostAfter])
			for i, tc := range cases {
				key := "k" + strconv.Itoa(i)
				serveKey(key, tc.next)
				if got := remaining(t, h, key); got != tc.want {
					t.Errorf("%s: %d left, want %d", tc.name, got, tc.want)
				}
			}
			if got := counterValue(z.inputs[inputCostAfter]) - before; got != 4 {
				t.Errorf("invalid_input{kind=cost_after} grew by %v, want 4", got)
			}
		})
	}
}

// TestCostAfterFallbackAndStatus: fallback <n> is charged when the real
// cost never arrives (also when the client is gone); with count_status
// the real cost is charged only when the status counts.
func TestCostAfterFallbackAndStatus(t *testing.T) {
	fb := int64(50)
	z := tokenZone(limiter.FixedWindow, 1000, time.Hour)
	z.CostAfter.Fallback = &fb
	counted := tokenZone(limiter.FixedWindow, 1000, time.Hour)
	counted.Name, counted.CountStatus = "counted", []int{200}
	counted.Key = "{http.request.header.X-Other-Key}"
	h := costAfterHandler(nil, z)
	provision(t, h)
	do(h, &statusHandler{err: caddyhttp.Error(http.StatusBadGateway, errors.New("down"))}, get("/", "X-API-Key", "a"))
	if got := remaining(t, h, "a"); got != 950 {
		t.Errorf("upstream failure: %d left, want 950 (fallback 50)", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	do(h, clientGone{cancel}, get("/", "X-API-Key", "b").WithContext(ctx))
	if got := remaining(t, h, "b"); got != 950 {
		t.Errorf("client gone: %d left, want 950 (fallback 50)", got)
	}

	hc := costAfterHandler(nil, counted)
	provision(t, hc)
	check := func(key string) int64 {
		t.Helper()
		res := do(hc, &usageBackend{cost: fixedUsage("0")}, get("/", "X-Other-Key", key))
		n, _ := strconv.ParseInt(res.header.Get("X-RateLimit-Remaining"), 10, 64)
		return n
	}
	do(hc, &usageBackend{cost: fixedUsage("300"), status: http.StatusInternalServerError}, get("/", "X-Other-Key", "c"))
	if got := check("c"); got != 1000 {
		t.Errorf("status not counted: %d left, want 1000 (nothing charged)", got)
	}
	do(hc, &usageBackend{cost: fixedUsage("300")}, get("/", "X-Other-Key", "c"))
	if got := check("c"); got != 700 {
		t.Errorf("status counted: %d left, want 700", got)
	}
}

// TestCostAfterDryRun: a dry_run zone is charged the real cost, never
// refuses, and its headers show the debt as nothing left.
func TestCostAfterDryRun(t *testing.T) {
	z := tokenZone(limiter.FixedWindow, 100, time.Hour)
	z.DryRun, z.Name = true, "dry_tokens"
	h := costAfterHandler(nil, z)
	provision(t, h)
	b := &usageBackend{cost: fixedUsage("80")}
	before := decisions("dry_tokens", "dry_run_refused")
	for i := range 5 {
		if res := do(h, b, get("/", "X-API-Key", "k")); res.status != http.StatusOK {
			t.Fatalf("request %d: status %d, want 200 (dry_run)", i, res.status)
		}
	}
	res := do(h, b, get("/", "X-API-Key", "k"))
	if got := res.header.Get("X-RateLimit-Remaining"); got != "0" {
		t.Errorf("after 400 of 100: X-RateLimit-Remaining %q, want 0", got)
	}
	// 1 + 80 fits 100 once more: the 3rd request on would refuse.
	if got := decisions("dry_tokens", "dry_run_refused") - before; got != 4 {
		t.Errorf("dry_run refusals counted: %v, want 4", got)
	}
}

// TestCostAfterDebt: debt delays the next admission as documented: a
// token bucket refuses until refills repay the debt and one unit more
// (Retry-After says when); a window refuses until the window ends.
func TestCostAfterDebt(t *testing.T) {
	tb := tokenZone(limiter.TokenBucket, 10, 10*time.Second) // 1 token/s
	h := costAfterHandler(sharedRedis(t), tb)
	provision(t, h)
	do(h, &usageBackend{cost: fixedUsage("30")}, get("/", "X-API-Key", "k"))
	res := do(h, &usageBackend{cost: fixedUsage("1")}, get("/", "X-API-Key", "k"))
	if res.status != http.StatusTooManyRequests {
		t.Fatalf("after 30 of a 10-token bucket: status %d, want 429", res.status)
	}
	// 10 - 30 = -20 tokens: 21 must refill at 1/s for one request.
	if ra, _ := strconv.Atoi(res.header.Get("Retry-After")); ra < 20 || ra > 21 {
		t.Errorf("Retry-After %q, want 21 (20 of debt and 1 to take)", res.header.Get("Retry-After"))
	}

	fw := tokenZone(limiter.FixedWindow, 10, time.Hour)
	hf := costAfterHandler(sharedRedis(t), fw)
	provision(t, hf)
	do(hf, &usageBackend{cost: fixedUsage("30")}, get("/", "X-API-Key", "k"))
	res = do(hf, &usageBackend{cost: fixedUsage("1")}, get("/", "X-API-Key", "k"))
	end := time.Hour - time.Duration(time.Now().UnixNano()%int64(time.Hour))
	if ra, _ := strconv.Atoi(res.header.Get("Retry-After")); res.status != http.StatusTooManyRequests || time.Duration(ra)*time.Second < end-5*time.Second {
		t.Errorf("fixed window in debt: status %d, Retry-After %q, want 429 until the window ends (%s)", res.status, res.header.Get("Retry-After"), end)
	}
}

// TestCostAfterValidate: the rules of cost_after, from JSON.
func TestCostAfterValidate(t *testing.T) {
	neg, big := int64(-1), int64(limiter.MaxEvents+1)
	for _, tc := range []struct {
		name string
		z    *Zone
		want string
	}{
		{"empty template", &Zone{Algorithm: limiter.FixedWindow, CostAfter: &CostAfter{Template: " "}}, "cost_after needs a template"},
		{"negative fallback", &Zone{CostAfter: &CostAfter{Template: "{x}", Fallback: &neg}}, "invalid cost_after fallback '-1'"},
		{"fallback past 2^50", &Zone{CostAfter: &CostAfter{Template: "{x}", Fallback: &big}}, "invalid cost_after fallback"},
		{"sliding_log", &Zone{Algorithm: limiter.SlidingLog, CostAfter: &CostAfter{Template: "{x}"}}, "not sliding_log"},
		{"leaky_bucket", &Zone{Algorithm: limiter.LeakyBucket, CostAfter: &CostAfter{Template: "{x}"}}, "not leaky_bucket"},
		{"concurrency", &Zone{Algorithm: limiter.Concurrency, CostAfter: &CostAfter{Template: "{x}"}}, "cost_after does not apply to concurrency zones"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.z.Name, tc.z.Key, tc.z.Events = "z", "k", 10
			if tc.z.Algorithm != limiter.Concurrency {
				tc.z.Window = caddy.Duration(time.Minute)
			}
			h := &Handler{Zones: []*Zone{tc.z}}
			if err := h.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCostAfterCaddyfile: the subdirective and its errors, with the line.
func TestCostAfterCaddyfile(t *testing.T) {
	h, err := parse(t, `ratelimit { zone api { key k; events 1000; window 1m; cost_after {http.response.header.X-Tokens-Used} fallback 20 } }`)
	if err != nil {
		t.Fatal(err)
	}
	c := h.Zones[0].CostAfter
	if c == nil || c.Template != "{http.response.header.X-Tokens-Used}" || c.Fallback == nil || *c.Fallback != 20 {
		t.Errorf("cost_after = %+v", c)
	}
	h, err = parse(t, `ratelimit { zone api { key k; events 1000; window 1m; cost_after {http.response.header.X-Tokens-Used} } }`)
	if err != nil || h.Zones[0].CostAfter.Fallback != nil {
		t.Errorf("without fallback: %+v, %v", h.Zones[0].CostAfter, err)
	}
	for _, tc := range []struct{ input, want string }{
		{"cost_after", "wrong argument count"},
		{"cost_after {x} fallback", "wrong argument count"},
		{"cost_after {x} fallback 1 2", "wrong argument count"},
		{"cost_after {x} default 5", "cost_after: unrecognized 'default'"},
		{"cost_after {x} fallback many", "invalid cost_after fallback 'many'"},
		{"cost_after {x} fallback -3", "invalid cost_after fallback '-3'"},
		{"cost_after {x}\nalgorithm leaky_bucket", "cost_after works with token_bucket, sliding_window and fixed_window"},
		{"cost_after {x} fallback 1\ncost_after {y}", "duplicate subdirective 'cost_after'"},
	} {
		_, err := parse(t, "ratelimit {\nzone api {\nkey k\nevents 10\nwindow 1m\n"+tc.input+"\n}\n}")
		line := "Testfile:" + strconv.Itoa(6+strings.Count(tc.input, "\n")*boolInt(strings.Contains(tc.want, "duplicate")))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), line) {
			t.Errorf("cost_after %q: error %v, want %q at %s", tc.input, err, tc.want, line)
		}
	}
	_, err = parse(t, "ratelimit {\nzone c {\nkey k\nevents 4\nalgorithm concurrency\ncost_after {x}\n}\n}")
	if err == nil || !strings.Contains(err.Error(), "cost_after does not apply to concurrency zones") || !strings.Contains(err.Error(), "Testfile:6") {
		t.Errorf("concurrency zone with cost_after: %v, want refused at Testfile:6", err)
	}
}
