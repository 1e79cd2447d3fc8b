package shortener

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestNodesPatchPropagation: two instances sharing Redis and PostgreSQL;
// after a PATCH on one, the other serves the new destination within 1 s,
// though it had the old one in its L1.
func TestNodesPatchPropagation(t *testing.T) {
	cs, _, url, prefix := sharedServices(t)
	a, b := twoNodes(t, cs.Store, url, prefix, nil)
	var slowest time.Duration
	for i := range 5 {
		out := create(t, a, fmt.Sprintf(`{"long_url":"https://example.com/before/%d"}`, i))
		// The other node learns a new code from the invalidation channel,
		// asynchronously: wait for it, then read twice more (L1 hits).
		eventually(t, time.Second, "the other node serves the new link", func() bool {
			return serve(t, b, "GET", "/"+out.Code, "").Header().Get("Location") == out.LongURL
		})
		for _, h := range []*Handler{a, b, a, b} { // the second round hits L1
			if w := serve(t, h, "GET", "/"+out.Code, ""); w.Header().Get("Location") != out.LongURL {
				t.Fatalf("before PATCH = %d %q", w.Code, w.Header().Get("Location"))
			}
		}
		newURL := fmt.Sprintf("https://example.com/after/%d", i)
		start := time.Now()
		if p := mergePatch(t, a, out.Code, fmt.Sprintf(`{"long_url":%q}`, newURL)); p.Code != http.StatusOK {
			t.Fatalf("PATCH = %d %s", p.Code, p.Body)
		}
		if w := serve(t, a, "GET", "/"+out.Code, ""); w.Header().Get("Location") != newURL {
			t.Errorf("editing node right after 200 redirects to %q, want %q", w.Header().Get("Location"), newURL)
		}
		eventually(t, time.Second, "the other node serves the new destination", func() bool {
			return serve(t, b, "GET", "/"+out.Code, "").Header().Get("Location") == newURL
		})
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("slowest propagation of 5 edits to the other node: %v", slowest)
}

// TestAPIPatchRedisDown: a PATCH whose Redis publish fails answers 503
// (the change is stored, its ETag given); retried once Redis is back, the
// same PATCH answers 200 without another version and reaches Redis.
func TestAPIPatchRedisDown(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	proxy := testenv.StartFaultProxy(t, testenv.RedisAddr(t))
	h := newHandler(t, openTestEmbedded(t), func(h *Handler) {
		h.Redis = &redispool.Config{URL: "redis://" + proxy.Addr(), KeyPrefix: prefix}
	})
	out := create(t, h, `{"long_url":"https://example.com/r1"}`)
	proxy.Set(testenv.Refuse)
	proxy.Cut()
	patch := `{"long_url":"https://example.com/r2"}`
	p := mergePatch(t, h, out.Code, patch, "If-Match", `"1"`)
	if p.Code != http.StatusServiceUnavailable || p.Header.Get("ETag") != `"2"` {
		t.Fatalf("PATCH with Redis down = %d ETag %q %s, want 503 \"2\"", p.Code, p.Header.Get("ETag"), p.Body)
	}
	if l, tag := getLink(t, h, out.Code); l.LongURL != "https://example.com/r2" || tag != `"2"` {
		t.Errorf("after the 503: stored %q %s, want the change stored", l.LongURL, tag)
	}
	proxy.Set(testenv.Pass)
	var retry *testingAnswer
	eventually(t, 10*time.Second, "the retried PATCH succeeds", func() bool {
		retry = mergePatch(t, h, out.Code, patch)
		return retry.Code == http.StatusOK
	})
	if retry.Header.Get("ETag") != `"2"` {
		t.Errorf("retried PATCH ETag = %q, want \"2\" (nothing more changed)", retry.Header.Get("ETag"))
	}
	v, err := rdb.Get(context.Background(), prefix+":l:"+out.Code).Result()
	if err != nil || v != "L0|https://example.com/r2" {
		t.Errorf("Redis holds %q, %v, want the edited link", v, err)
	}
}
