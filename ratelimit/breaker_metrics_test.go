package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// caddy_ratelimit_breaker_open counts the breakers that are open: one up
// when a breaker opens (by failures or with no connection), one down when
// its probe closes it or its handler is cleaned up; a stopped breaker that
// opens again (a request still in flight) is not counted.
func TestBreakerOpenGauge(t *testing.T) {
	c := newClock()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "breaker_open"})
	a := &breaker{now: c.Now, gauge: g}
	b := &breaker{now: c.Now, gauge: g}
	step := func(what string, want float64) {
		t.Helper()
		if got := gaugeValue(t, g); got != want {
			t.Fatalf("%s: breaker_open = %v, want %v (a %s, b %s)", what, got, want, a.state(), b.state())
		}
	}
	step("both closed", 0)
	record(a, breakerThreshold, false)
	step("a opened by failures", 1)
	record(a, breakerThreshold, false)
	step("more failures of the open a", 1)
	b.notReady()
	step("b opened with no connection", 2)

	c.Add(breakerCooldown)
	ok, probe := a.allow(context.Background())
	if !ok || !probe {
		t.Fatalf("after the cooldown: allow = %v, probe = %v; want the probe", ok, probe)
	}
	a.failure(probe)
	step("a's probe failed", 2)
	c.Add(breakerCooldown)
	_, probe = a.allow(context.Background())
	a.success(probe)
	step("a's probe succeeded", 1)

	b.stop()
	step("b's handler cleaned up while open", 0)
	b.mu.Lock()
	b.closeLocked()
	b.mu.Unlock()
	record(b, breakerThreshold, false)
	step("the stopped b opened again by a request in flight", 0)
	a.stop()
	step("a stopped closed", 0)
}

// A provisioned handler's breaker moves the registered gauge.
func TestBreakerOpenGaugeRegistered(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	h := &Handler{Zones: []*Zone{zone("breaker_gauge", 5, time.Minute)}}
	if err := h.Provision(ctx); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	before := gaugeValue(t, metrics.breakerOpen)
	record(h.breaker, breakerThreshold, false)
	if got := gaugeValue(t, metrics.breakerOpen); got != before+1 {
		t.Errorf("breaker opened: caddy_ratelimit_breaker_open = %v, want %v", got, before+1)
	}
	h.Cleanup()
	if got := gaugeValue(t, metrics.breakerOpen); got != before {
		t.Errorf("handler cleaned up: caddy_ratelimit_breaker_open = %v, want %v", got, before)
	}
}
