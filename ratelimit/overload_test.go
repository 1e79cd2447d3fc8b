package ratelimit

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// overloadedStore answers every decision as a loaded coalescer does.
type overloadedStore struct{ calls atomic.Int64 }

func (s *overloadedStore) Decide(ctx context.Context, asks []limiter.Ask) ([]limiter.Result, error) {
	s.calls.Add(1)
	return nil, fmt.Errorf("ratelimit script: %w", limiter.ErrOverloaded)
}

// A decision the process could not send in time is refused with 503 and
// Retry-After: 1 whatever on_error says, counted as `overloaded`, and is
// no store failure: store_errors_total stays, the breaker stays closed.
func TestOverloadedQueueRefuses(t *testing.T) {
	for _, mode := range []string{"open", "closed", "local"} {
		t.Run(mode, func(t *testing.T) {
			name := "ovl-" + mode
			s := new(overloadedStore)
			h := &Handler{Zones: []*Zone{zone(name, 10, time.Minute)}, OnError: mode, store: s}
			logs := provision(t, h)
			next := new(statusHandler)
			errs0, ovl0 := counterValue(metrics.storeErrors), decisions(name, "overloaded")
			for i := range 20 {
				res := do(h, next, get("/", "X-API-Key", "k"))
				if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") != "1" {
					t.Fatalf("request %d: status %d Retry-After %q, want 503 and 1", i+1, res.status, res.header.Get("Retry-After"))
				}
			}
			if n := next.Calls(); n != 0 {
				t.Errorf("%d requests passed, want none", n)
			}
			if d := decisions(name, "overloaded") - ovl0; d != 20 {
				t.Errorf("overloaded grew by %v, want 20", d)
			}
			if d := counterValue(metrics.storeErrors) - errs0; d != 0 {
				t.Errorf("store_errors_total grew by %v, want 0", d)
			}
			if st := h.breaker.state(); st != "closed" {
				t.Errorf("breaker %s, want closed", st)
			}
			if n := s.calls.Load(); n != 20 {
				t.Errorf("store asked %d times, want 20 (never skipped)", n)
			}
			for _, o := range []string{"fail_open", "fail_closed", "fallback"} {
				if v := decisions(name, o); v != 0 {
					t.Errorf("%s = %v, want 0 (on_error never applies)", o, v)
				}
			}
			if n := logs.FilterMessage("rate limit store failed; on_error applies").Len(); n != 0 {
				t.Errorf("%d store failure warnings, want 0", n)
			}
			if n := logs.FilterMessage("rate limit queue overloaded; refused with 503").Len(); n != 1 {
				t.Errorf("%d overload warnings, want 1 (at most one a second)", n)
			}
		})
	}
	t.Run("dry run", func(t *testing.T) {
		z := zone("ovl-dry", 10, time.Minute)
		z.DryRun = true
		h := &Handler{Zones: []*Zone{z}, store: new(overloadedStore)}
		provision(t, h)
		if res := do(h, new(statusHandler), get("/", "X-API-Key", "k")); res.status != http.StatusOK {
			t.Errorf("dry_run zone overloaded: status %d, want 200 (dry_run never refuses)", res.status)
		}
		if v := decisions("ovl-dry", "overloaded"); v != 1 {
			t.Errorf("overloaded = %v, want 1", v)
		}
	})
}
