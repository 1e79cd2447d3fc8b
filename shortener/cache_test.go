package shortener

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

func TestCacheEncodeDecode(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	c, err := newCache(100, 5*time.Second, 60*time.Second, 24*time.Hour, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		l       link.Link
		value   string
		ttl     time.Duration
		state   state
		l1TTL   time.Duration
		expires time.Time
	}{
		{"live", link.Link{Code: "a", LongURL: "https://e.com/x|y"}, "L0|https://e.com/x|y", 24 * time.Hour, stateLive, 5 * time.Second, time.Time{}},
		{"expiring", link.Link{Code: "a", LongURL: "https://e.com/", ExpiresAt: now.Add(time.Hour)}, "L" + itoa(now.Add(time.Hour).UnixMilli()) + "|https://e.com/", time.Hour, stateLive, 5 * time.Second, now.Add(time.Hour)},
		{"expiring soon", link.Link{Code: "a", LongURL: "https://e.com/", ExpiresAt: now.Add(2 * time.Second)}, "L" + itoa(now.Add(2*time.Second).UnixMilli()) + "|https://e.com/", 2 * time.Second, stateLive, 2 * time.Second, now.Add(2 * time.Second)},
		{"revoked", link.Link{Code: "a", LongURL: "https://e.com/", RevokedAt: now}, "G", 24 * time.Hour, stateGone, 5 * time.Second, time.Time{}},
		{"expired", link.Link{Code: "a", LongURL: "https://e.com/", ExpiresAt: now}, "G", 24 * time.Hour, stateGone, 5 * time.Second, time.Time{}},
	} {
		v, ttl := c.encodeLink(tc.l)
		if v != tc.value || ttl != tc.ttl {
			t.Errorf("%s: encodeLink = %q %v, want %q %v", tc.name, v, ttl, tc.value, tc.ttl)
		}
		e, err := c.decode(v)
		if err != nil {
			t.Fatalf("%s: decode(%q): %v", tc.name, v, err)
		}
		if e.state != tc.state || e.ttl != tc.l1TTL {
			t.Errorf("%s: decoded state %d ttl %v, want %d %v", tc.name, e.state, e.ttl, tc.state, tc.l1TTL)
		}
		if tc.state == stateLive {
			if e.location != tc.l.LongURL || (tc.expires.IsZero() != (e.expires == 0)) ||
				(!tc.expires.IsZero() && e.expires != tc.expires.UnixNano()) {
				t.Errorf("%s: decoded %+v", tc.name, e)
			}
		}
	}
	if e, err := c.decode("N"); err != nil || e.state != stateUnknown || e.ttl != 5*time.Second {
		t.Errorf("decode(N) = %+v, %v", e, err)
	}
	for _, bad := range []string{"", "X", "L", "Lx|u", "L0|", "L5"} {
		if _, err := c.decode(bad); err == nil {
			t.Errorf("decode(%q) = nil error", bad)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestCacheNegativeTTLInL1(t *testing.T) {
	c, err := newCache(100, 5*time.Second, 2*time.Second, time.Hour, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if e := c.unknown(); e.ttl != 2*time.Second {
		t.Errorf("negative L1 ttl = %v, want negative_ttl 2s (shorter than the L1 ttl)", e.ttl)
	}
}

func TestCacheInvalidationRace(t *testing.T) {
	c, err := newCache(100, time.Minute, time.Minute, time.Hour, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	epoch := c.epoch("abc")
	c.dropLocal("abc") // a create lands while a lookup is in flight
	c.setLocal("abc", c.unknown(), epoch)
	if _, ok := c.local("abc"); ok {
		t.Errorf("a lookup older than an invalidation filled L1")
	}
	c.setLocal("abc", c.unknown(), c.epoch("abc"))
	if _, ok := c.local("abc"); !ok {
		t.Errorf("a fresh lookup did not fill L1")
	}
}

// The fill after a store lookup must never overwrite what the API wrote
// meanwhile (a revocation, or a link replacing a negative entry).
func TestCacheFillNeverOverwrites(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	c, err := newCache(100, time.Minute, time.Minute, time.Hour, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	c.useRedis(rdb, "p", zap.NewNop())
	t.Cleanup(c.close)
	ctx := context.Background()
	if err := c.publishLink(ctx, link.Link{Code: "abc", RevokedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c.fill(ctx, "abc", &link.Link{Code: "abc", LongURL: "https://e.com/"}) // stale read from before the revoke
	if v, _ := mr.Get("p:l:abc"); v != "G" {
		t.Errorf("Redis holds %q after a stale fill, want the revocation G", v)
	}
	c.fill(ctx, "new", nil)
	if v, _ := mr.Get("p:l:new"); v != "N" || mr.TTL("p:l:new") != time.Minute {
		t.Errorf("negative entry %q ttl %v, want N for negative_ttl", v, mr.TTL("p:l:new"))
	}
	if err := c.publishLink(ctx, link.Link{Code: "new", LongURL: "https://e.com/n"}); err != nil {
		t.Fatal(err)
	}
	if v, _ := mr.Get("p:l:new"); v != "L0|https://e.com/n" || mr.TTL("p:l:new") != time.Hour {
		t.Errorf("created link %q ttl %v, want it to replace the negative entry for cache_ttl", v, mr.TTL("p:l:new"))
	}
}
