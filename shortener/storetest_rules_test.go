package shortener

import (
	"context"
	"errors"
	"testing"
	"time"
)

// testRulesRoundTrip checks on an empty store that per-link rules come back
// as stored (at their bounds; forward_query false kept apart from unset),
// that a link without rules reads back with none, and that rules out of
// bounds are refused with nothing stored.
func testRulesRoundTrip(t *testing.T, ctx context.Context, s Store, base time.Time) {
	t.Helper()
	on, off := true, false
	links := []Link{
		{Code: "rules-full", LongURL: "https://example.com/r", CreatedAt: base,
			RedirectStatus: 308, ValidFrom: base.Add(time.Hour), ExpiresAt: base.Add(2 * time.Hour),
			MaxClicks: 100, ForwardQuery: &on},
		{Code: "rules-bounds", LongURL: "https://example.com/b", CreatedAt: base,
			RedirectStatus: 301, ValidFrom: minValidFrom, MaxClicks: maxMaxClicks, ForwardQuery: &off,
			ClicksServed: 7},
		{Code: "rules-307", LongURL: "https://example.com/7", CreatedAt: base, RedirectStatus: 307, MaxClicks: 1},
		{Code: "rules-302", LongURL: "https://example.com/2", CreatedAt: base, RedirectStatus: 302},
		{Code: "rules-none", LongURL: "https://example.com/n", CreatedAt: base},
	}
	for i, got := range createAndRead(t, ctx, s, links) {
		assertRules(t, got, links[i])
	}
	for name, l := range map[string]Link{
		"status 200":           {RedirectStatus: 200},
		"status 303":           {RedirectStatus: 303},
		"max_clicks negative":  {MaxClicks: -1},
		"max_clicks too big":   {MaxClicks: maxMaxClicks + 1},
		"valid_from early":     {ValidFrom: minValidFrom.Add(-time.Microsecond)},
		"valid_from at expiry": {ValidFrom: base.Add(time.Hour), ExpiresAt: base.Add(time.Hour)},
		"served negative":      {MaxClicks: 5, ClicksServed: -1},
	} {
		l.Code, l.LongURL, l.CreatedAt = "rules-refused", "https://example.com/x", base
		if err := s.Create(ctx, l); err == nil || errors.Is(err, ErrCodeTaken) {
			t.Errorf("Create with %s = %v, want an error", name, err)
		}
	}
	if _, err := s.Get(ctx, "rules-refused"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(rules-refused) = %v, want ErrNotFound", err)
	}
}

// assertRules compares the rules of got with want's.
func assertRules(t *testing.T, got, want Link) {
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
