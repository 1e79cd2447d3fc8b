package linktest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// testTargetingRoundTrip checks on an empty store that a link's targeting
// comes back byte for byte (at its bound, non-ASCII included) with its
// fallback URL, from Get, a listing and an edit (whose history records
// each part changed), and that targeting out of bounds is refused with
// nothing stored.
func testTargetingRoundTrip(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	t.Helper()
	small := []byte(`{"rules":[{"name":"café ✓","if":{"device":["mobile"]},"url":"https://example.com/m"}]}`)
	big := boundTargeting()
	links := []link.Link{
		{Code: "tg-small", LongURL: "https://example.com/t", CreatedAt: base, Targeting: small,
			FallbackURL: "https://example.com/gone"},
		{Code: "tg-bound", LongURL: "https://example.com/b", CreatedAt: base, Targeting: big,
			FallbackURL: "https://example.com/" + strings.Repeat("f", link.MaxFallbackURL-len("https://example.com/"))},
		{Code: "tg-none", LongURL: "https://example.com/n", CreatedAt: base},
	}
	for i, got := range createAndRead(t, ctx, s, links) {
		assertTargeting(t, "Get", got, links[i])
	}
	if ll, ok := s.(link.LinkLister); ok {
		page, err := ll.ListLinks(ctx, link.ListQuery{Q: "tg-", Limit: 10, Now: base})
		if err != nil {
			t.Fatalf("ListLinks: %v", err)
		}
		for _, want := range links {
			for _, got := range page.Links {
				if got.Code == want.Code {
					assertTargeting(t, "ListLinks", got.Link, want)
				}
			}
		}
	}
	testTargetingEdit(t, ctx, s, base)
	for name, l := range map[string]link.Link{
		"targeting too big":    {Targeting: append(bytes.Clone(big[:len(big)-1]), ' ', '}')},
		"targeting not JSON":   {Targeting: []byte(`{"rules":`)},
		"targeting not object": {Targeting: []byte(`[]`)},
		"fallback too long":    {FallbackURL: "https://example.com/" + strings.Repeat("f", link.MaxFallbackURL)},
	} {
		l.Code, l.LongURL, l.CreatedAt = "tg-refused", "https://example.com/x", base
		if err := s.Create(ctx, l); err == nil || errors.Is(err, link.ErrCodeTaken) {
			t.Errorf("Create with %s = %v, want an error", name, err)
		}
	}
	if _, err := s.Get(ctx, "tg-refused"); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Get(tg-refused) = %v, want ErrNotFound", err)
	}
}

// testTargetingEdit changes a link's rules and fallback through the
// store's LinkEditor and reads the change and its history back.
func testTargetingEdit(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	t.Helper()
	ed, ok := s.(link.LinkEditor)
	if !ok {
		return
	}
	next := []byte(`{"variants":[{"name":"a","url":"https://example.com/a","weight":50},{"name":"b","url":"https://example.com/b","weight":50}]}`)
	got, err := ed.Edit(ctx, "tg-small", link.Edit{At: base.Add(time.Minute), Key: "k",
		Apply: func(l *link.Link) error { l.Targeting, l.FallbackURL = next, ""; return nil }})
	if err != nil {
		t.Fatalf("Edit(tg-small): %v", err)
	}
	assertTargeting(t, "Edit", got, link.Link{Code: "tg-small", Targeting: next})
	if got, err = s.Get(ctx, "tg-small"); err != nil {
		t.Fatalf("Get(tg-small) after the edit: %v", err)
	}
	assertTargeting(t, "Get after Edit", got, link.Link{Code: "tg-small", Targeting: next})
	hist, err := ed.History(ctx, "tg-small", 0, 10)
	if err != nil || len(hist) != 1 {
		t.Fatalf("History(tg-small) = %d entries, %v; want 1 (the edit changed the link)", len(hist), err)
	}
	for _, f := range []string{"rules", "variants", "fallback_url"} {
		if _, ok := hist[0].Changes[f]; !ok {
			t.Errorf("History(tg-small): no change of %s recorded", f)
		}
	}
}

// boundTargeting is a targeting object of exactly MaxTargetingBytes.
func boundTargeting() []byte {
	head, tail := `{"rules":[{"name":"`, `","url":"https://example.com/x"}]}`
	n := link.MaxTargetingBytes - len(head) - len(tail)
	return []byte(head + strings.Repeat("é", n/2) + strings.Repeat("x", n%2) + tail)
}

func assertTargeting(t *testing.T, how string, got, want link.Link) {
	t.Helper()
	if !bytes.Equal(got.Targeting, want.Targeting) || (got.Targeting == nil) != (want.Targeting == nil) {
		t.Errorf("%s(%q).Targeting = %.80q (%d bytes), want %.80q (%d bytes)", how, want.Code,
			got.Targeting, len(got.Targeting), want.Targeting, len(want.Targeting))
	}
	if got.FallbackURL != want.FallbackURL {
		t.Errorf("%s(%q).FallbackURL = %.60q, want %.60q", how, want.Code, got.FallbackURL, want.FallbackURL)
	}
}
