package shortener

import (
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

const testTargeting = `{"rules":[{"name":"fr","if":{"language":["fr"]},"url":"https://example.com/fr|x"}],"variants":[{"name":"a","url":"https://example.com/a","weight":30},{"name":"b","url":"https://example.com/b","weight":70}]}`

// A link with targeting or a fallback URL round trips through its T
// value: rules, expiry, fallback and the compiled set; a gone link keeps
// its fallback; links without either keep their L and R values, and
// those still read.
func TestTargetedRedisValue(t *testing.T) {
	h := newHandler(t, newMemStore(), nil)
	c := h.cache
	on := true
	exp := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	l := link.Link{Code: "t1", LongURL: "https://example.com/long|1", ExpiresAt: exp, RedirectStatus: 307, ForwardQuery: &on,
		MaxClicks: 5, Targeting: []byte(testTargeting), FallbackURL: "https://example.com/fallback|1"}
	v, ttl := c.encodeLink(l)
	if !strings.HasPrefix(v, "TL") || ttl <= 0 {
		t.Fatalf("encodeLink = %q %v, want a TL value", v, ttl)
	}
	e, err := c.decode(v)
	if err != nil {
		t.Fatalf("decode(%q): %v", v, err)
	}
	if e.state != stateLive || e.location != l.LongURL || e.fallback != l.FallbackURL || e.expires != exp.UnixNano() ||
		e.rules == nil || *e.rules != (entryRules{status: 307, maxClicks: 5, forward: forwardOn}) || e.set == nil || len(e.set.Rules()) != 1 {
		t.Errorf("decode(%q) = %+v rules %+v", v, e, e.rules)
	}
	// Revoked, with and without a fallback.
	l.RevokedAt = time.Now().Add(-time.Minute)
	if v, _ := c.encodeLink(l); v != "TG0|0|0|0|0|30|0|https://example.com/fallback|1" {
		t.Errorf("revoked with fallback: %q", v)
	} else if e, err := c.decode(v); err != nil || e.state != stateGone || e.fallback != l.FallbackURL {
		t.Errorf("decode(%q) = %+v, %v", v, e, err)
	}
	l.FallbackURL = ""
	if v, _ := c.encodeLink(l); v != "G" {
		t.Errorf("revoked without fallback: %q, want G", v)
	}
	// No targeting, no fallback: the values of before.
	plain := link.Link{Code: "p", LongURL: "https://example.com/p"}
	if v, _ := c.encodeLink(plain); v != "L0|https://example.com/p" {
		t.Errorf("plain link: %q", v)
	}
	plain.RedirectStatus = 301
	if v, _ := c.encodeLink(plain); v != "R0|301|0|0|0|https://example.com/p" {
		t.Errorf("link with rules: %q", v)
	}
	for _, old := range []string{"L0|https://example.com/p", "R0|301|0|0|0|https://example.com/p"} {
		if e, err := c.decode(old); err != nil || e.location != "https://example.com/p" || e.set != nil {
			t.Errorf("decode(%q) = %+v, %v", old, e, err)
		}
	}
	// A stored rule set that no longer parses: the link serves its long URL.
	if e, err := c.decode(encodeTargeted(targetedLink{targeting: `{"rules":[{"nope":1}]}`, long: "https://example.com/x"})); err != nil || e.set != nil || e.location != "https://example.com/x" {
		t.Errorf("bad targeting: %+v, %v", e, err)
	}
	for _, bad := range []string{"T", "TX0|0|0|0|0|0|0|https://x/", "TL0|0|0|0|0|0|0|", "TL0|0|0|0|0|5|0|abc", "TL0|303|0|0|0|0|0|https://x/",
		"TL0|0|0|0|3|0|0|https://x/", "TL0|0|0|0|0|-1|0|https://x/", "TG0|0|0|0|0|0|0|https://x/", "TG5|0|0|0|0|0|0|", "TL0|0|0|0|0|0|9999999999|https://x/"} {
		if e, err := c.decode(bad); err == nil {
			t.Errorf("decode(%q) = %+v, want an error", bad, e)
		}
	}
}

// FuzzTargetedValue: decoding any T value never panics; one that decodes
// encodes back to a value that decodes the same, and a valid link's
// fields round trip exactly.
func FuzzTargetedValue(f *testing.F) {
	f.Add("TL0|0|0|0|0|0|0|https://x/", int64(0), 302, int64(0), int64(0), int8(0), "", "", "https://x/", false)
	f.Add("TG0|0|0|0|0|3|0|abc", int64(1), 301, int64(7), int64(9), int8(2), "https://f/", testTargeting, "https://l/", true)
	f.Fuzz(func(t *testing.T, v string, exp int64, status int, fromUs, maxClicks int64, forward int8, fallback, tj, long string, gone bool) {
		if got, err := decodeTargeted(v); err == nil {
			again, err := decodeTargeted(encodeTargeted(got))
			if err != nil || again != got {
				t.Fatalf("decode(encode(decode(%q))) = %+v, %v; want %+v", v, again, err, got)
			}
		}
		x := targetedLink{gone: gone, fallback: fallback}
		if !gone {
			st := []int{0, 301, 302, 307, 308}[uint(status)%5]
			x.expiresMs, x.targeting, x.long = max(exp, 0), tj, long
			x.rules = entryRules{status: st, validFrom: (max(fromUs, 0) % 9e15) * 1000, maxClicks: max(maxClicks, 0) % (link.MaxMaxClicks + 1), forward: int8(uint8(forward) % 3)}
			if x.long == "" {
				x.long = "https://l/"
			}
		}
		got, err := decodeTargeted(encodeTargeted(x))
		if err != nil || got != x {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", x, got, err)
		}
	})
}
