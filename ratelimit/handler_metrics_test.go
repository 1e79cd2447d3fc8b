package ratelimit

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// Several handlers in one config share its registry, and a reload brings a
// new registry: the collectors register once on each, without error.
func TestMetricsRegistry(t *testing.T) {
	gather := func(ctx caddy.Context) map[string]bool {
		t.Helper()
		mfs, err := ctx.GetMetricsRegistry().Gather()
		if err != nil {
			t.Fatalf("Gather: %v", err)
		}
		names := map[string]bool{}
		for _, mf := range mfs {
			names[mf.GetName()] = true
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "key" {
						t.Errorf("%s has a key label", mf.GetName())
					}
				}
			}
		}
		return names
	}
	for reload := range 2 {
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		for i := range 3 {
			h := &Handler{Zones: []*Zone{zone("metrics", 5, time.Minute)}}
			if err := h.Provision(ctx); err != nil {
				t.Fatalf("config %d, handler %d: Provision: %v", reload, i, err)
			}
			if s := do(h, new(statusHandler), get("/")).status; s != http.StatusOK {
				t.Fatalf("status %d", s)
			}
			h.Cleanup()
		}
		names := gather(ctx)
		for _, want := range []string{"caddy_ratelimit_decisions_total", "caddy_ratelimit_store_duration_seconds", "caddy_ratelimit_store_errors_total", "caddy_ratelimit_breaker_open"} {
			if !names[want] {
				var got []string
				for n := range names {
					if strings.HasPrefix(n, "caddy_ratelimit") {
						got = append(got, n)
					}
				}
				t.Errorf("config %d: %s not in the registry (have %v)", reload, want, got)
			}
		}
		cancel()
	}
}
