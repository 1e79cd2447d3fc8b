package linktest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// testRulesRoundTrip checks on an empty store that per-link rules come back
// as stored (at their bounds; forward_query false kept apart from unset),
// that a link without rules reads back with none, and that rules out of
// bounds are refused with nothing stored.
func testRulesRoundTrip(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	t.Helper()
	on, off := true, false
	links := []link.Link{
		{Code: "rules-full", LongURL: "https://example.com/r", CreatedAt: base,
			RedirectStatus: 308, ValidFrom: base.Add(time.Hour), ExpiresAt: base.Add(2 * time.Hour),
			MaxClicks: 100, ForwardQuery: &on},
		{Code: "rules-bounds", LongURL: "https://example.com/b", CreatedAt: base,
			RedirectStatus: 301, ValidFrom: link.MinValidFrom, MaxClicks: link.MaxMaxClicks, ForwardQuery: &off,
			ClicksServed: 7},
		{Code: "rules-307", LongURL: "https://example.com/7", CreatedAt: base, RedirectStatus: 307, MaxClicks: 1},
		{Code: "rules-302", LongURL: "https://example.com/2", CreatedAt: base, RedirectStatus: 302},
		{Code: "rules-none", LongURL: "https://example.com/n", CreatedAt: base},
	}
	for i, got := range createAndRead(t, ctx, s, links) {
		AssertRules(t, got, links[i])
	}
	for name, l := range map[string]link.Link{
		"status 200":           {RedirectStatus: 200},
		"status 303":           {RedirectStatus: 303},
		"max_clicks negative":  {MaxClicks: -1},
		"max_clicks too big":   {MaxClicks: link.MaxMaxClicks + 1},
		"valid_from early":     {ValidFrom: link.MinValidFrom.Add(-time.Microsecond)},
		"valid_from at expiry": {ValidFrom: base.Add(time.Hour), ExpiresAt: base.Add(time.Hour)},
		"served negative":      {MaxClicks: 5, ClicksServed: -1},
	} {
		l.Code, l.LongURL, l.CreatedAt = "rules-refused", "https://example.com/x", base
		if err := s.Create(ctx, l); err == nil || errors.Is(err, link.ErrCodeTaken) {
			t.Errorf("Create with %s = %v, want an error", name, err)
		}
	}
	if _, err := s.Get(ctx, "rules-refused"); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Get(rules-refused) = %v, want ErrNotFound", err)
	}
}

// AssertRules compares the rules of got with want's.
func AssertRules(t *testing.T, got, want link.Link) {
	t.Helper()
	fq := func(b *bool) string {
		if b == nil {
			return "nil"
		}
		if *b {
			return "true"
		}
		return "false"
	}
	if got.RedirectStatus != want.RedirectStatus || !got.ValidFrom.Equal(want.ValidFrom) ||
		got.MaxClicks != want.MaxClicks || got.ClicksServed != want.ClicksServed || fq(got.ForwardQuery) != fq(want.ForwardQuery) {
		t.Errorf("Get(%q) rules: status %d valid_from %v max %d served %d forward %s; want %d %v %d %d %s",
			want.Code, got.RedirectStatus, got.ValidFrom, got.MaxClicks, got.ClicksServed, fq(got.ForwardQuery),
			want.RedirectStatus, want.ValidFrom, want.MaxClicks, want.ClicksServed, fq(want.ForwardQuery))
	}
	if !got.ValidFrom.IsZero() && got.ValidFrom.Location() != time.UTC {
		t.Errorf("Get(%q).ValidFrom is in %v, want UTC", want.Code, got.ValidFrom.Location())
	}
}

// testServeCounter checks link.ServeCounter on an empty store: a link with
// max_clicks serves exactly that many, also under concurrent takes, then
// none (nothing more counted); a link without max_clicks is never counted;
// an absent code is ErrNotFound.
func testServeCounter(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	t.Helper()
	sc, ok := s.(link.ServeCounter)
	if !ok {
		t.Fatalf("%T does not implement link.ServeCounter", s)
	}
	if _, _, err := sc.TakeServe(ctx, "absent"); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("TakeServe(absent) = %v, want ErrNotFound", err)
	}
	createAndRead(t, ctx, s, []link.Link{
		{Code: "three", LongURL: "https://example.com/3", CreatedAt: base, MaxClicks: 3},
		{Code: "free", LongURL: "https://example.com/f", CreatedAt: base},
		{Code: "many", LongURL: "https://example.com/m", CreatedAt: base, MaxClicks: 20},
	})
	for i, want := range []struct {
		left int64
		ok   bool
	}{{2, true}, {1, true}, {0, true}, {0, false}, {0, false}} {
		if left, ok, err := sc.TakeServe(ctx, "three"); err != nil || left != want.left || ok != want.ok {
			t.Errorf("TakeServe(three) #%d = %d, %v, %v; want %d, %v", i+1, left, ok, err, want.left, want.ok)
		}
	}
	if left, ok, err := sc.TakeServe(ctx, "free"); err != nil || left != -1 || !ok {
		t.Errorf("TakeServe(free) = %d, %v, %v; want -1, true", left, ok, err)
	}
	var served atomic.Int64
	var wg sync.WaitGroup
	for range 60 {
		wg.Go(func() {
			if _, ok, err := sc.TakeServe(ctx, "many"); err != nil {
				t.Errorf("TakeServe(many): %v", err)
			} else if ok {
				served.Add(1)
			}
		})
	}
	wg.Wait()
	if served.Load() != 20 {
		t.Errorf("60 concurrent TakeServe(many) served %d, want 20", served.Load())
	}
	for code, want := range map[string]int64{"three": 3, "free": 0, "many": 20} {
		if l, err := s.Get(ctx, code); err != nil || l.ClicksServed != want || !l.Exhausted() != (code == "free") {
			t.Errorf("Get(%s).ClicksServed = %d (exhausted %v), %v; want %d", code, l.ClicksServed, l.Exhausted(), err, want)
		}
	}
}
