package shortener

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

func TestRedirectFound(t *testing.T) {
	s := newMemStore()
	s.links["abc1234"] = link.Link{Code: "abc1234", LongURL: "https://example.com/a?b=c", CreatedAt: time.Now()}
	h := newHandler(t, s, func(h *Handler) { h.SourceHeader = true })

	for i, wantSource := range []string{"store", "local"} {
		for _, method := range []string{"GET", "HEAD"} {
			w := serve(t, h, method, "http://sho.rt/abc1234", "")
			if w.Code != http.StatusFound {
				t.Fatalf("#%d %s = %d, want 302", i, method, w.Code)
			}
			want := map[string]string{
				"Location":           "https://example.com/a?b=c",
				"Cache-Control":      "private, max-age=0",
				"X-Robots-Tag":       "noindex",
				"X-Shortener-Source": wantSource,
			}
			for k, v := range want {
				if got := w.Header().Get(k); got != v {
					t.Errorf("#%d %s: %s = %q, want %q", i, method, k, got, v)
				}
			}
			wantSource = "local"
		}
	}
	if got := redirectsMetric(h, "local", "found"); got != 3 {
		t.Errorf("local found metric = %v, want 3", got)
	}
}

func TestRedirectStatusAndCacheControl(t *testing.T) {
	for _, status := range []int{301, 302, 307, 308} {
		s := newMemStore()
		s.links["abc"] = link.Link{Code: "abc", LongURL: "https://example.com/"}
		h := newHandler(t, s, func(h *Handler) { h.Status = status; h.CacheControl = "public, max-age=60" })
		w := serve(t, h, "GET", "/abc", "")
		if w.Code != status || w.Header().Get("Cache-Control") != "public, max-age=60" {
			t.Errorf("status %d: got %d, Cache-Control %q", status, w.Code, w.Header().Get("Cache-Control"))
		}
		if w.Header().Get("X-Shortener-Source") != "" {
			t.Errorf("X-Shortener-Source set without source_header")
		}
	}
}

func TestRedirectMountedUnderPrefix(t *testing.T) {
	s := newMemStore()
	s.links["abc"] = link.Link{Code: "abc", LongURL: "https://example.com/"}
	h := newHandler(t, s, nil)
	if w := serve(t, h, "GET", "/go/abc", ""); w.Code != http.StatusFound {
		t.Errorf("GET /go/abc = %d, want 302 (last segment is the code)", w.Code)
	}
}

func TestRedirectPassesOtherRequests(t *testing.T) {
	c := &countingStore{Store: newMemStore()}
	h := newHandler(t, c, nil)
	for _, tc := range []struct{ method, target string }{
		{"GET", "/"},
		{"GET", "/docs/"},
		{"POST", "/abc"},
		{"PUT", "/abc"},
		{"OPTIONS", "/abc"},
	} {
		w := serve(t, h, tc.method, tc.target, "")
		if w.Code != http.StatusTeapot || w.Header().Get("X-Next") != "1" {
			t.Errorf("%s %s = %d, want it passed to the next handler", tc.method, tc.target, w.Code)
		}
	}
	if n := c.gets.Load(); n != 0 {
		t.Errorf("store Get called %d times, want 0", n)
	}
}

func TestRedirectInvalidCodeTouchesNothing(t *testing.T) {
	c := &countingStore{Store: newMemStore()}
	h := newHandler(t, c, nil)
	for _, target := range []string{"/favicon.ico", "/a%20b", "/" + strings.Repeat("a", 65), "/%3Cscript%3E", "/a:b"} {
		if w := serve(t, h, "GET", target, ""); w.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", target, w.Code)
		}
	}
	if n := c.gets.Load(); n != 0 {
		t.Errorf("store Get called %d times for invalid codes, want 0", n)
	}
	if got := redirectsMetric(h, "none", "invalid"); got != 5 {
		t.Errorf("invalid metric = %v, want 5", got)
	}
}

func TestRedirectUnknownCachedNegatively(t *testing.T) {
	c := &countingStore{Store: newMemStore()}
	h := newHandler(t, c, func(h *Handler) { h.SourceHeader = true })
	w := serve(t, h, "GET", "/nope123", "")
	if w.Code != http.StatusNotFound || w.Header().Get("X-Shortener-Source") != "store" {
		t.Fatalf("first = %d source %q, want 404 from store", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	w = serve(t, h, "GET", "/nope123", "")
	if w.Code != http.StatusNotFound || w.Header().Get("X-Shortener-Source") != "local" {
		t.Fatalf("second = %d source %q, want 404 from local", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	if n := c.gets.Load(); n != 1 {
		t.Errorf("store Get called %d times, want 1", n)
	}
}

func TestRedirectGone(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := newMemStore()
	s.links["revoked"] = link.Link{Code: "revoked", LongURL: "https://example.com/", RevokedAt: now.Add(-time.Hour)}
	s.links["expired"] = link.Link{Code: "expired", LongURL: "https://example.com/", ExpiresAt: now.Add(-time.Second)}
	s.links["expires"] = link.Link{Code: "expires", LongURL: "https://example.com/", ExpiresAt: now.Add(time.Minute)}
	h := newHandler(t, s, func(h *Handler) { h.now = clock })
	for _, code := range []string{"revoked", "expired"} {
		for range 2 {
			if w := serve(t, h, "GET", "/"+code, ""); w.Code != http.StatusGone {
				t.Errorf("GET /%s = %d, want 410", code, w.Code)
			}
		}
	}
	if w := serve(t, h, "GET", "/expires", ""); w.Code != http.StatusFound {
		t.Fatalf("GET /expires before expiry = %d, want 302", w.Code)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	// Still in L1, but the entry knows its expiry.
	if w := serve(t, h, "GET", "/expires", ""); w.Code != http.StatusGone {
		t.Errorf("GET /expires after expiry = %d, want 410", w.Code)
	}
}

func TestRedirectStoreDown(t *testing.T) {
	s := newMemStore()
	s.links["cached"] = link.Link{Code: "cached", LongURL: "https://example.com/c"}
	s.links["later"] = link.Link{Code: "later", LongURL: "https://example.com/l"}
	h := newHandler(t, s, nil)
	if w := serve(t, h, "GET", "/cached", ""); w.Code != http.StatusFound {
		t.Fatalf("warming = %d", w.Code)
	}
	s.down.Store(true)
	if w := serve(t, h, "GET", "/cached", ""); w.Code != http.StatusFound {
		t.Errorf("cached link with store down = %d, want 302", w.Code)
	}
	for range 2 {
		if w := serve(t, h, "GET", "/later", ""); w.Code != http.StatusServiceUnavailable {
			t.Errorf("uncached link with store down = %d, want 503", w.Code)
		}
	}
	s.down.Store(false)
	if w := serve(t, h, "GET", "/later", ""); w.Code != http.StatusFound {
		t.Errorf("after the store returns = %d, want 302 (errors are never cached)", w.Code)
	}
}

func TestRedirectLocalCacheOff(t *testing.T) {
	c := &countingStore{Store: newMemStore()}
	c.Store.(*memStore).links["abc"] = link.Link{Code: "abc", LongURL: "https://example.com/"}
	h := newHandler(t, c, func(h *Handler) { h.LocalCacheOff = true })
	for range 3 {
		if w := serve(t, h, "GET", "/abc", ""); w.Code != http.StatusFound {
			t.Fatalf("GET = %d", w.Code)
		}
	}
	if n := c.gets.Load(); n != 3 {
		t.Errorf("store Get called %d times with no cache at all, want 3", n)
	}
}

func TestRedirectSingleFlight(t *testing.T) {
	slow := &slowStore{countingStore: countingStore{Store: newMemStore()}, delay: 50 * time.Millisecond}
	slow.Store.(*memStore).links["viral1"] = link.Link{Code: "viral1", LongURL: "https://example.com/v"}
	h := newHandler(t, slow, nil)
	var wg sync.WaitGroup
	codes := make([]int, 1000)
	for i := range codes {
		wg.Go(func() { codes[i] = serve(t, h, "GET", "/viral1", "").Code })
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusFound {
			t.Fatalf("request %d = %d, want 302", i, c)
		}
	}
	if n := slow.gets.Load(); n != 1 {
		t.Errorf("store Get called %d times for 1000 concurrent misses, want 1", n)
	}
}

// slowStore answers Get after a delay, so concurrent misses overlap.
type slowStore struct {
	countingStore
	delay time.Duration
}

func (s *slowStore) Get(ctx context.Context, code string) (link.Link, error) {
	time.Sleep(s.delay)
	return s.countingStore.Get(ctx, code)
}

// Later handlers may edit header values in place (a `header` replacement):
// that must not reach the cached entry.
func TestRedirectHeaderValuesNotShared(t *testing.T) {
	s := newMemStore()
	s.links["abc"] = link.Link{Code: "abc", LongURL: "https://example.com/"}
	h := newHandler(t, s, nil)
	w := serve(t, h, "GET", "/abc", "")
	for _, k := range []string{"Location", "Cache-Control", "X-Robots-Tag"} {
		w.Header()[k][0] = "edited"
	}
	w = serve(t, h, "GET", "/abc", "")
	if w.Header().Get("Location") != "https://example.com/" || w.Header().Get("Cache-Control") != DefaultCacheControl ||
		w.Header().Get("X-Robots-Tag") != "noindex" {
		t.Errorf("second response headers %v: an in-place edit of the first leaked into the cache", w.Header())
	}
}

// An L1 hit allocates twice, click counting included: the header values'
// array and, with source_header on, the X-Shortener-Source value.
func TestRedirectL1HitAllocs(t *testing.T) {
	s := newClickMemStore()
	s.links["abc1234"] = link.Link{Code: "abc1234", LongURL: "https://example.com/p"}
	h := newHandler(t, s, func(h *Handler) { h.LocalCacheTTL = caddy.Duration(time.Hour); h.SourceHeader = true })
	if h.clicks == nil {
		t.Fatal("click counting is off")
	}
	r, _ := http.NewRequest("GET", "http://sho.rt/abc1234", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	r.Header.Set("Referer", "https://news.example.com/item?id=42")
	w := &discardWriter{h: http.Header{}}
	_ = h.ServeHTTP(w, r, nextHandler)
	allocs := testing.AllocsPerRun(200, func() {
		clear(w.h)
		if err := h.ServeHTTP(w, r, nextHandler); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("L1 hit: %v allocs/op, want at most 2", allocs)
	}
}

// discardWriter is a ResponseWriter that keeps nothing but its header map,
// so the benchmark measures the handler only.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkRedirectL1Hit measures a redirect from the in-process cache,
// click counting on (a browser request with a referrer).
func BenchmarkRedirectL1Hit(b *testing.B) {
	s := newClickMemStore()
	s.links["abc1234"] = link.Link{Code: "abc1234", LongURL: "https://example.com/some/long/path"}
	h := newHandler(b, s, func(h *Handler) { h.LocalCacheTTL = caddy.Duration(time.Hour) })
	if h.clicks == nil {
		b.Fatal("click counting is off")
	}
	r, _ := http.NewRequest("GET", "http://sho.rt/abc1234", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	r.Header.Set("Referer", "https://news.example.com/item?id=42")
	w := &discardWriter{h: http.Header{}}
	if err := h.ServeHTTP(w, r, nextHandler); err != nil || w.h.Get("Location") == "" {
		b.Fatalf("warming: %v %v", err, w.h)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		if err := h.ServeHTTP(w, r, nextHandler); err != nil {
			b.Fatal(err)
		}
	}
}

// A client that leaves does not cancel the shared lookup of the others.
func TestRedirectCancelledClientDoesNotCancelFlight(t *testing.T) {
	slow := &slowStore{countingStore: countingStore{Store: newMemStore()}, delay: 200 * time.Millisecond}
	slow.Store.(*memStore).links["shared1"] = link.Link{Code: "shared1", LongURL: "https://example.com/s"}
	h := newHandler(t, slow, nil)

	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest("GET", "http://sho.rt/shared1", nil).WithContext(ctx)
	done := make(chan error, 1)
	go func() { done <- h.ServeHTTP(httptest.NewRecorder(), r, nextHandler) }()
	time.Sleep(20 * time.Millisecond)
	other := make(chan int, 1)
	go func() { other <- serve(t, h, "GET", "/shared1", "").Code }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; err == nil {
		t.Errorf("cancelled request answered without error")
	}
	if code := <-other; code != http.StatusFound {
		t.Errorf("the other request = %d, want 302", code)
	}
	if n := slow.gets.Load(); n != 1 {
		t.Errorf("store Get called %d times, want 1", n)
	}
}
