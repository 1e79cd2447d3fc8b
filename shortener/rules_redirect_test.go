package shortener

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// TakeServe makes the test store a link.ServeCounter, like both real stores.
func (s *memStore) TakeServe(ctx context.Context, code string) (int64, bool, error) {
	if s.down.Load() {
		return 0, false, errDown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.links[code]
	switch {
	case !ok:
		return 0, false, link.ErrNotFound
	case l.MaxClicks == 0:
		return -1, true, nil
	case l.ClicksServed >= l.MaxClicks:
		return 0, false, nil
	}
	l.ClicksServed++
	s.links[code] = l
	return l.MaxClicks - l.ClicksServed, true, nil
}

// TakeServe passes through to the wrapped store's counter.
func (c *countingStore) TakeServe(ctx context.Context, code string) (int64, bool, error) {
	sc, ok := c.Store.(link.ServeCounter)
	if !ok {
		return 0, false, errNoCounter
	}
	return sc.TakeServe(ctx, code)
}

// TestRedirectStatusPerLink: a link's redirect_status overrides the
// handler's status; a link without one keeps it.
func TestRedirectStatusPerLink(t *testing.T) {
	h := newHandler(t, newMemStore(), func(h *Handler) { h.Status = 307 })
	for body, want := range map[string]int{
		`{"long_url":"https://example.com/p","code":"plain"}`:                       307,
		`{"long_url":"https://example.com/m","code":"moved","redirect_status":301}`: 301,
		`{"long_url":"https://example.com/f","code":"found","redirect_status":302}`: 302,
		`{"long_url":"https://example.com/k","code":"perm","redirect_status":308}`:  308,
	} {
		out := create(t, h, body)
		for range 2 { // from the store, then from L1
			if w := serve(t, h, "GET", "/"+out.Code, ""); w.Code != want || w.Header().Get("Location") != out.LongURL {
				t.Errorf("GET /%s = %d %q, want %d %q", out.Code, w.Code, w.Header().Get("Location"), want, out.LongURL)
			}
		}
	}
}

// TestForwardQuery: the request's query is appended (with & after the long
// URL's own query, before its fragment) when the link says so, or when it
// says nothing and the handler's forward_query is on; a result over the
// length limit redirects to the long URL alone.
func TestForwardQuery(t *testing.T) {
	long2040 := "https://example.com/?" + strings.Repeat("a", urlpolicy.MaxLongURL-21-8) // 2040 bytes
	cases := []struct {
		handlerOn bool
		link      string // forward_query of the link: "", "true", "false"
		long      string
		target    string
		want      string
	}{
		{false, "", "https://example.com/a", "?utm=x", "https://example.com/a"},
		{true, "", "https://example.com/a", "?utm=x", "https://example.com/a?utm=x"},
		{true, "false", "https://example.com/a", "?utm=x", "https://example.com/a"},
		{false, "true", "https://example.com/a", "?utm=x&b=%20y", "https://example.com/a?utm=x&b=%20y"},
		{false, "true", "https://example.com/a?k=v#frag", "?utm=x", "https://example.com/a?k=v&utm=x#frag"},
		{false, "true", "https://example.com/a?", "?utm=x", "https://example.com/a?utm=x"},
		{false, "true", "https://example.com/a", "", "https://example.com/a"},
		{false, "true", "https://example.com/a", "?a=%0d%0aX:y", "https://example.com/a?a=%0d%0aX:y"},
		{true, "", long2040, "?utm=x", long2040 + "&utm=x"},
		{true, "", long2040, "?utm=xyzw", long2040},
	}
	for i, tc := range cases {
		h := newHandler(t, newMemStore(), func(h *Handler) { h.ForwardQuery = tc.handlerOn })
		body := fmt.Sprintf(`{"long_url":%q,"code":"fq%d"`, tc.long, i)
		if tc.link != "" {
			body += `,"forward_query":` + tc.link
		}
		create(t, h, body+"}")
		w := serve(t, h, "GET", fmt.Sprintf("/fq%d%s", i, tc.target), "")
		if w.Code != http.StatusFound || w.Header().Get("Location") != tc.want {
			t.Errorf("case %d: GET %s = %d %q, want 302 %q", i, tc.target, w.Code, w.Header().Get("Location"), tc.want)
		}
	}
}

// TestWithQueryEscapes: bytes a Location may not carry are escaped, so a
// forwarded query cannot split headers or add a fragment.
func TestWithQueryEscapes(t *testing.T) {
	got := withQuery("https://example.com/a", "x=\r\n Set-Cookie:\x7f#é")
	want := "https://example.com/a?x=%0D%0A%20Set-Cookie:%7F%23%C3%A9"
	if got != want {
		t.Errorf("withQuery = %q, want %q", got, want)
	}
}

// TestValidFromWindow: before valid_from the code answers 404 as an unknown
// one, but the link is cached with its window (the second 404 comes from
// L1, with no store read), so at valid_from it redirects from L1 at once,
// without waiting for a negative TTL; the code filter (embedded store,
// built) keeps the code. The same on two nodes with PostgreSQL and Redis,
// where the other node learns the link before its start.
func TestValidFromWindow(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		clock := newFakeClock(time.Now())
		es := openTestEmbedded(t)
		s := &countingStore{Store: es}
		// Counted, and listing its codes, so the handler builds a filter.
		h := newHandler(t, struct {
			*countingStore
			link.CodeLister
		}{s, es.(link.CodeLister)}, func(h *Handler) {
			h.now, h.SourceHeader = clock.Now, true
		})
		eventually(t, 10*time.Second, "the code filter is built", func() bool { return h.cache.codes.cur.Load() != nil })
		checkWindow(t, clock, h, h, s)
	})
	t.Run("nodes", func(t *testing.T) {
		clock := newFakeClock(time.Now())
		s, _, url, prefix := sharedServices(t)
		a, b := twoNodes(t, s, url, prefix, func(h *Handler) { h.now = clock.Now })
		checkWindow(t, clock, a, b, s)
	})
}

// checkWindow creates on a a link starting in one second and checks its
// window on b.
func checkWindow(t *testing.T, clock *fakeClock, a, b *Handler, s *countingStore) {
	t.Helper()
	from := clock.Now().Add(time.Second).UTC()
	out := create(t, a, fmt.Sprintf(`{"long_url":"https://example.com/soon","code":"soon","valid_from":%q}`, from.Format(time.RFC3339Nano)))
	// b learns the link (the store, or Redis), then holds it in L1 (once
	// a's invalidation message, which may come after b's first lookup, has
	// been handled): every answer meanwhile is a 404.
	eventually(t, 10*time.Second, "b answers from L1", func() bool {
		w := serve(t, b, "GET", "/soon", "")
		if w.Code != http.StatusNotFound {
			t.Fatalf("GET before valid_from = %d, want 404", w.Code)
		}
		return w.Header().Get("X-Shortener-Source") == sourceLocal
	})
	gets := s.gets.Load()
	w := serve(t, b, "GET", "/soon", "")
	if w.Code != http.StatusNotFound || w.Header().Get("X-Shortener-Source") != sourceLocal || s.gets.Load() != gets {
		t.Fatalf("GET before valid_from = %d from %q (%d store reads), want 404 from L1 and none",
			w.Code, w.Header().Get("X-Shortener-Source"), s.gets.Load()-gets)
	}
	if w := serve(t, b, "HEAD", "/soon", ""); w.Code != http.StatusNotFound {
		t.Errorf("HEAD before valid_from = %d, want 404", w.Code)
	}
	clock.Advance(time.Second)
	w = serve(t, b, "GET", "/soon", "")
	if w.Code != http.StatusFound || w.Header().Get("Location") != out.LongURL || w.Header().Get("X-Shortener-Source") != sourceLocal {
		t.Fatalf("GET at valid_from = %d %q from %q, want 302 %q from L1", w.Code, w.Header().Get("Location"),
			w.Header().Get("X-Shortener-Source"), out.LongURL)
	}
}

// TestOldRedisEntry: an L2 entry in the format written before rules
// (L<expiry>|<url>) still redirects, as a link without rules; an R entry
// round trips its rules; a malformed R entry is not served (the store is).
func TestOldRedisEntry(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	s := newMemStore()
	h := newHandler(t, s, func(h *Handler) {
		h.Redis = &redispool.Config{URL: testenv.RedisURL(t), KeyPrefix: prefix}
		h.SourceHeader, h.Status, h.ForwardQuery = true, 307, true
	})
	ctx := context.Background()
	if err := rdb.Set(ctx, prefix+":l:oldfmt", "L0|https://example.com/old", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	w := serve(t, h, "GET", "/oldfmt?q=1", "")
	if w.Code != 307 || w.Header().Get("Location") != "https://example.com/old?q=1" || w.Header().Get("X-Shortener-Source") != sourceRedis {
		t.Errorf("old entry: %d %q from %q, want 307 https://example.com/old?q=1 from redis", w.Code, w.Header().Get("Location"), w.Header().Get("X-Shortener-Source"))
	}
	off := false
	l := link.Link{Code: "ruled", LongURL: "https://example.com/r|x", RedirectStatus: 308, ForwardQuery: &off,
		ValidFrom: time.Now().Add(-time.Hour).Truncate(time.Microsecond), ExpiresAt: time.Now().Add(time.Hour)}
	v, _ := h.cache.encodeLink(l)
	e, err := h.cache.decode(v)
	if err != nil || e.location != l.LongURL || *e.rules != (entryRules{status: 308, validFrom: e.rules.validFrom, forward: forwardOff}) ||
		e.rules.validFrom != l.ValidFrom.UnixNano() || e.expires == 0 {
		t.Errorf("decode(%q) = %+v %+v, %v", v, e, e.rules, err)
	}
	for _, bad := range []string{"R0|303|0|0|0|https://x/", "R0|302|0|0|3|https://x/", "R0|302|0|-1|0|https://x/", "R0|302|0|0|0|", "R0|302|0|0"} {
		if e, err := h.cache.decode(bad); err == nil {
			t.Errorf("decode(%q) = %+v, want an error", bad, e)
		}
	}
}
