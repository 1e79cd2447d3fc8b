package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// TestInvalidCostLogThrottled: a flood of requests with an invalid cost
// is answered 400 each (the request's fault, nothing charged), but logged
// once per key per interval, never with the value at full length; the
// others are summed in one line when the interval ends.
func TestInvalidCostLogThrottled(t *testing.T) {
	h := &Handler{Zones: []*Zone{{Name: "units", Key: "{http.request.header.X-API-Key}", Events: 10,
		Window: caddy.Duration(time.Minute), Cost: "{http.request.header.X-Cost}"}}}
	c := newClock()
	h.now = c.Now
	logs := provision(t, h)
	next := new(statusHandler)
	huge := strings.Repeat("9x", 32<<10) // 64 KiB
	for _, key := range []string{"a", "b"} {
		for range 100 {
			if res := do(h, next, get("/", "X-API-Key", key, "X-Cost", huge)); res.status != http.StatusBadRequest {
				t.Fatalf("invalid cost: status %d, want 400", res.status)
			}
		}
	}
	if next.Calls() != 0 {
		t.Errorf("%d requests with an invalid cost reached the next handler", next.Calls())
	}
	lines := logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("cost").All()
	if len(lines) != 2 {
		t.Fatalf("got %d warning lines for 200 invalid costs of 2 keys, want 2: %v", len(lines), lines)
	}
	for _, e := range logs.All() {
		for k, v := range e.ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, huge[:maxLoggedValue+1]) {
				t.Errorf("log %q field %s holds more than %d bytes of the value: %d bytes", e.Message, k, maxLoggedValue, len(s))
			}
		}
		if len(e.Message) > 200 {
			t.Errorf("log message of %d bytes", len(e.Message))
		}
	}
	c.Add(refusalLogEvery)
	do(h, next, get("/", "X-API-Key", "a", "X-Cost", "x"))
	sum := logs.FilterMessage("rate limit invalid input").All()
	if len(sum) != 1 || sum[0].ContextMap()["count"] != int64(200) || sum[0].ContextMap()["logged"] != int64(2) {
		t.Errorf("summary = %v, want one line: 200 invalid, 2 logged", sum)
	}
}

// TestCostAfterInvalidChargesFallback: a real cost that is not a valid
// number charges the zone's cost_after fallback (as when none arrives),
// and is logged once per key per interval, cut to maxLoggedValue bytes.
func TestCostAfterInvalidChargesFallback(t *testing.T) {
	fb := int64(50)
	z := tokenZone(limiter.FixedWindow, 1000, time.Hour)
	z.CostAfter.Fallback = &fb
	h := costAfterHandler(nil, z)
	logs := provision(t, h)
	huge := strings.Repeat("z", 1<<20)
	for range 10 {
		do(h, &usageBackend{cost: fixedUsage(huge)}, get("/", "X-API-Key", "a"))
	}
	if got := remaining(t, h, "a"); got != 1000-10*fb {
		t.Errorf("10 invalid real costs: %d left, want %d (fallback %d each)", got, 1000-10*fb, fb)
	}
	lines := logs.FilterMessageSnippet("cost_after").FilterLevelExact(zapcore.WarnLevel).All()
	if len(lines) != 1 {
		t.Fatalf("got %d warnings for 10 invalid real costs of one key, want 1", len(lines))
	}
	if v, _ := lines[0].ContextMap()["value"].(string); strings.Contains(v, huge[:maxLoggedValue+1]) {
		t.Errorf("logged value %q holds more than %d bytes of the value", v, maxLoggedValue)
	}
}

// FuzzRequestCostValue: whatever a client sends as its cost, the request
// is allowed only for a non-negative integer within the quota (checked
// against strconv), refused (429) past it, answered 400 otherwise, and no
// log line holds more than maxLoggedValue bytes of the value.
func FuzzRequestCostValue(f *testing.F) {
	for _, s := range []string{"0", "5", " 7 ", "11", "-1", "+5", "1e3", "0x10", "99999999999999999999", "1,2", "", "٣",
		strings.Repeat("8", 100), strings.Repeat("=", 1000)} {
		f.Add(s)
	}
	h := &Handler{Zones: []*Zone{{Name: "units", Key: "{http.request.header.X-API-Key}", Events: 10,
		Window: caddy.Duration(time.Minute), Cost: "{http.request.header.X-Cost}"}}}
	c := newClock()
	h.now = c.Now
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	core, logs := observer.New(zap.DebugLevel)
	h.logger = zap.New(core)
	if err := h.Provision(ctx); err != nil {
		f.Fatal(err)
	}
	defer h.Cleanup()
	next := new(statusHandler)
	f.Fuzz(func(t *testing.T, v string) {
		c.Add(time.Minute) // a fresh quota for each value
		res := do(h, next, get("/", "X-API-Key", "k", "X-Cost", v))
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		valid := err == nil && n >= 0 || err != nil && errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(strings.TrimSpace(v), "-")
		switch {
		case !valid && res.status != http.StatusBadRequest:
			t.Fatalf("cost %q: status %d, want 400", v, res.status)
		case valid && n <= 10 && err == nil && res.status != http.StatusOK:
			t.Fatalf("cost %q: status %d, want 200", v, res.status)
		case valid && (n > 10 || err != nil) && res.status != http.StatusTooManyRequests:
			t.Fatalf("cost %q: status %d, want 429", v, res.status)
		}
		for _, e := range logs.TakeAll() {
			for k, fv := range e.ContextMap() {
				if s, ok := fv.(string); ok && len(v) > maxLoggedValue && strings.Contains(s, v[:maxLoggedValue+1]) {
					t.Fatalf("log %q field %s holds more than %d bytes of %q", e.Message, k, maxLoggedValue, v)
				}
			}
		}
	})
}
