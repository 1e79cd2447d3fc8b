package link

import (
	"testing"
	"time"
)

// A link answers a reuse request only with the same targeting and
// fallback; ReuseKey tells them apart exactly when Reusable does.
func TestReuseComparesTargeting(t *testing.T) {
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	base := Link{Code: "abc", LongURL: "https://example.com/", CreatedAt: now}
	rules := []byte(`{"rules":[{"url":"https://example.com/m"}]}`)
	for _, tc := range []struct {
		name        string
		stored, req Link
		same        bool
	}{
		{"neither", base, base, true},
		{"same targeting", with(base, rules, "https://example.com/f"), with(base, rules, "https://example.com/f"), true},
		{"stored has targeting", with(base, rules, ""), base, false},
		{"request has targeting", base, with(base, rules, ""), false},
		{"other targeting", with(base, rules, ""), with(base, []byte(`{"rules":[]}`), ""), false},
		{"other fallback", with(base, nil, "https://example.com/f"), base, false},
		{"fallback split differently", with(base, []byte(`{}`), "x|3|y"), with(base, []byte(`{}`), "x"), false},
	} {
		if got := Reusable(tc.stored, tc.req, now); got != tc.same {
			t.Errorf("%s: Reusable = %v, want %v", tc.name, got, tc.same)
		}
		if got := ReuseKey(tc.stored) == ReuseKey(tc.req); got != tc.same {
			t.Errorf("%s: equal ReuseKeys = %v, want %v", tc.name, got, tc.same)
		}
	}
}

func with(l Link, targeting []byte, fallback string) Link {
	l.Targeting, l.FallbackURL = targeting, fallback
	return l
}
