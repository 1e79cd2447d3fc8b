package shortener

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// Tests of issue 13 finding 6: unknown codes cost (almost) nothing.

// pgListing opens the PostgreSQL store on a fresh schema, listing and
// counted; it returns the DSN for writes behind the handler's back.
func pgListing(t *testing.T) (*listingStore, string) {
	t.Helper()
	dsn := testenv.Postgres(t)
	s, _ := nodeStore(t, dsn)
	return newListingStore(t, s.Store), dsn
}

// A scan of 100,000 distinct random valid codes reaches the store for at
// most 1% of them and leaves at most as many Redis keys.
func TestCodeFilterScan(t *testing.T) {
	s, _ := pgListing(t)
	rdb, prefix := testenv.Redis(t)
	h := newHandler(t, s, func(h *Handler) {
		h.Redis = &redispool.Config{URL: testenv.RedisURL(t), KeyPrefix: prefix}
		h.ClicksOff = true
	})
	links := map[string]string{}
	for i := range 200 {
		long := fmt.Sprintf("https://example.com/%d", i)
		links[create(t, h, fmt.Sprintf(`{"long_url":%q}`, long)).Code] = long
	}
	waitFilterReady(t, h)

	const scan = 100_000
	var codes []string
	for _, c := range testCodes(t, scan+len(links)) {
		if _, ok := links[c]; !ok && len(codes) < scan {
			codes = append(codes, c)
		}
	}
	keysBefore, getsBefore := redisKeys(t, rdb, prefix), s.gets.Load()
	var wg sync.WaitGroup
	var mu sync.Mutex
	notFound := 0
	for w := range 4 {
		wg.Go(func() {
			n := 0
			for i := w; i < len(codes); i += 4 {
				if serve(t, h, "GET", "/"+codes[i], "").Code == http.StatusNotFound {
					n++
				}
			}
			mu.Lock()
			notFound += n
			mu.Unlock()
		})
	}
	wg.Wait()
	gets := s.gets.Load() - getsBefore
	keys := redisKeys(t, rdb, prefix) - keysBefore
	t.Logf("scan of %d unknown codes: %d store lookups, %d new Redis keys, %v answered by the filter",
		notFound, gets, keys, redirectsMetric(h, sourceFilter, resultNotFound))
	if notFound != scan {
		t.Fatalf("%d of the scanned codes answered 404, want all %d", notFound, scan)
	}
	if gets > scan/100 {
		t.Errorf("the scan reached the store %d times, want at most %d (1%%)", gets, scan/100)
	}
	if keys > scan/100 {
		t.Errorf("the scan left %d Redis keys, want at most %d (1%%)", keys, scan/100)
	}
	for code, long := range links {
		if w := serve(t, h, "GET", "/"+code, ""); w.Code != http.StatusFound || w.Header().Get("Location") != long {
			t.Fatalf("GET /%s after the scan = %d %q, want 302 %q", code, w.Code, w.Header().Get("Location"), long)
		}
	}
}

// A link another writer inserts straight into PostgreSQL is served within
// the sync interval; until then it answers 404 (from the filter, cached
// nowhere).
func TestCodeFilterOtherWriter(t *testing.T) {
	s, dsn := pgListing(t)
	h := newHandler(t, s, func(h *Handler) {
		h.SourceHeader = true
		h.CodeFilterSync = caddy.Duration(500 * time.Millisecond)
	})
	waitFilterReady(t, h)
	if w := serve(t, h, "GET", "/imported1", ""); w.Code != http.StatusNotFound || w.Header().Get("X-Shortener-Source") != sourceFilter {
		t.Fatalf("before the insert = %d from %q, want 404 from the filter", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `INSERT INTO shortener_links (code, long_url) VALUES ('imported1', 'https://example.com/imported')`); err != nil {
		t.Fatal(err)
	}
	var w *httpResult
	eventually(t, 20*time.Second, "the imported link is served", func() bool {
		r := serve(t, h, "GET", "/imported1", "")
		w = &httpResult{r.Code, r.Header().Get("Location"), r.Header().Get("X-Shortener-Source")}
		return r.Code != http.StatusNotFound
	})
	if *w != (httpResult{http.StatusFound, "https://example.com/imported", sourceStore}) {
		t.Errorf("imported link = %+v, want 302 from the store", *w)
	}
}

type httpResult struct {
	status           int
	location, source string
}

// A create on one instance is served by another at once, through the
// invalidation channel: the other's delta sync is held.
func TestCodeFilterPubSub(t *testing.T) {
	base, _ := pgListing(t)
	_, prefix := testenv.Redis(t)
	url := testenv.RedisURL(t)
	mk := func(s link.Store, now func() time.Time) *Handler {
		return newHandler(t, s, func(h *Handler) {
			h.Redis = &redispool.Config{URL: url, KeyPrefix: prefix}
			h.SourceHeader = true
			h.now = now
		})
	}
	a := mk(base, nil)
	bs := newListingStore(t, base.Store)
	fixed := time.Now() // b's filter never goes stale while its sync is held
	b := mk(bs, func() time.Time { return fixed })
	waitFilterReady(t, a)
	waitFilterReady(t, b)
	bs.holdListing(t)
	eventually(t, 20*time.Second, "b's sync is held", func() bool { return bs.held.Load() > 0 })

	out := create(t, a, `{"long_url":"https://example.com/fresh"}`)
	eventually(t, 5*time.Second, "b's filter learns the code from the channel", func() bool {
		return b.cache.codes.cur.Load().Has(out.Code)
	})
	w := serve(t, b, "GET", "/"+out.Code, "")
	if w.Code != http.StatusFound || w.Header().Get("X-Shortener-Source") != sourceRedis {
		t.Errorf("GET on b = %d from %q, want 302 from redis", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	// b's filter still answers (its sync is held, not failing).
	if w := serve(t, b, "GET", "/nosuch12", ""); w.Code != http.StatusNotFound || w.Header().Get("X-Shortener-Source") != sourceFilter {
		t.Errorf("unknown code on b = %d from %q, want 404 from the filter", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	if n := bs.held.Load(); n != 1 {
		t.Errorf("%d of b's listing calls held, want 1 (the sync did not move)", n)
	}
}

// With Redis down, or no Redis at all, a link created on one instance is
// served by another within the sync interval, by the delta sync; the
// creating instance serves it at once.
func TestCodeFilterWithoutRedis(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis bool
	}{{"redis down", true}, {"no redis", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := pgListing(t)
			var cfg *redispool.Config
			var proxy *testenv.FaultProxy
			if tc.redis {
				_, prefix := testenv.Redis(t)
				proxy = testenv.StartFaultProxy(t, testenv.RedisAddr(t))
				cfg = &redispool.Config{URL: "redis://" + proxy.Addr() + "/0", KeyPrefix: prefix}
			}
			mk := func() *Handler {
				return newHandler(t, s, func(h *Handler) {
					h.Redis = cfg
					h.CodeFilterSync = caddy.Duration(500 * time.Millisecond)
				})
			}
			a, b := mk(), mk()
			waitFilterReady(t, a)
			waitFilterReady(t, b)
			if proxy != nil {
				proxy.Set(testenv.Refuse)
				proxy.Cut()
			}
			out := create(t, a, `{"long_url":"https://example.com/no-redis"}`)
			if w := serve(t, a, "GET", "/"+out.Code, ""); w.Code != http.StatusFound {
				t.Errorf("GET on the creating instance = %d, want 302", w.Code)
			}
			eventually(t, 20*time.Second, "the other instance serves the new link", func() bool {
				return serve(t, b, "GET", "/"+out.Code, "").Code == http.StatusFound
			})
		})
	}
}

// Until its first build completes the filter answers nothing: every
// unknown code is looked up as before; a failing listing counts errors.
func TestCodeFilterNotBeforeFirstBuild(t *testing.T) {
	s := newListingStore(t, openTestEmbedded(t))
	release := s.holdListing(t)
	h := newHandler(t, s, func(h *Handler) { h.SourceHeader = true })
	eventually(t, 10*time.Second, "the build waits for the listing", func() bool { return s.held.Load() > 0 })
	for i := range 20 {
		w := serve(t, h, "GET", fmt.Sprintf("/unbuilt%d", i), "")
		if w.Code != http.StatusNotFound || w.Header().Get("X-Shortener-Source") != sourceStore {
			t.Fatalf("unknown code before the build = %d from %q, want 404 from the store", w.Code, w.Header().Get("X-Shortener-Source"))
		}
	}
	if n := s.gets.Load(); n != 20 {
		t.Errorf("store lookups before the build = %d, want 20", n)
	}
	s.failing.Store(true)
	release()
	eventually(t, 10*time.Second, "failed listings are counted", func() bool {
		return counterValue(h.cache.codes.m.syncErrors) > 0
	})
	if filterServing(h) {
		t.Fatal("the filter serves although no listing succeeded")
	}
	s.failing.Store(false)
	waitFilterReady(t, h)
	if w := serve(t, h, "GET", "/built1", ""); w.Code != http.StatusNotFound || w.Header().Get("X-Shortener-Source") != sourceFilter {
		t.Errorf("unknown code after the build = %d from %q, want 404 from the filter", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	if n := s.gets.Load(); n != 20 {
		t.Errorf("store lookups = %d after the build, want still 20", n)
	}
	if v := gaugeValue(h.cache.codes.m.bytes); v <= 0 {
		t.Errorf("code_filter_bytes = %v, want > 0", v)
	}
}

// Concurrent creates and lookups while the filter is rebuilt on every
// tick (run with -race): each link redirects right after its 201 on the
// creating instance, and unknown codes answer 404.
func TestCodeFilterConcurrent(t *testing.T) {
	s := openTestEmbedded(t)
	h := newHandler(t, s, func(h *Handler) {
		h.CodeFilterSync = caddy.Duration(MinCodeFilterSync)
		h.ClicksOff = true
		h.tuneFilter = func(sy *filterSyncer) { sy.page, sy.rebuild = 7, 0 }
	})
	waitFilterReady(t, h)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := range 40 {
				long := fmt.Sprintf("https://example.com/%d/%d", w, i)
				out := create(t, h, fmt.Sprintf(`{"long_url":%q}`, long))
				if r := serve(t, h, "GET", "/"+out.Code, ""); r.Code != http.StatusFound || r.Header().Get("Location") != long {
					t.Errorf("GET /%s right after its 201 = %d %q, want 302", out.Code, r.Code, r.Header().Get("Location"))
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for _, code := range testCodes(t, 400) {
				if r := serve(t, h, "GET", "/x"+code, ""); r.Code != http.StatusNotFound {
					t.Errorf("unknown code = %d, want 404", r.Code)
					return
				}
			}
		})
	}
	wg.Wait()
	if b := counterValue(h.cache.codes.m.builds); b < 2 {
		t.Errorf("%v builds during the test, want rebuilds", b)
	}
}

// A bbolt file written before links were numbered: its links are listed by
// code, served, and unknown codes are filtered.
func TestCodeFilterEmbeddedOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := store.OpenEmbedded(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, code := range []string{"old1", "old2"} {
		if err := s.Create(ctx, link.Link{Code: code, LongURL: "https://example.com/" + code}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(store.EmbeddedOrder) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = store.OpenEmbedded(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if page, err := s.CodesSince(ctx, 0, 10); err != nil || len(page) != 0 {
		t.Fatalf("CodesSince on the old file = %v, %v, want none", page, err)
	}
	h := newHandler(t, s, func(h *Handler) { h.SourceHeader = true })
	waitFilterReady(t, h)
	for _, code := range []string{"old1", "old2"} {
		if w := serve(t, h, "GET", "/"+code, ""); w.Code != http.StatusFound {
			t.Errorf("GET /%s = %d, want 302", code, w.Code)
		}
	}
	if w := serve(t, h, "GET", "/old3", ""); w.Code != http.StatusNotFound || w.Header().Get("X-Shortener-Source") != sourceFilter {
		t.Errorf("GET /old3 = %d from %q, want 404 from the filter", w.Code, w.Header().Get("X-Shortener-Source"))
	}
}

// code_filter off: unknown codes are looked up as before, even on a store
// that lists its codes.
func TestCodeFilterOff(t *testing.T) {
	s := newListingStore(t, openTestEmbedded(t))
	h := newHandler(t, s, func(h *Handler) { h.CodeFilterOff = true; h.SourceHeader = true })
	if h.cache.codes != nil {
		t.Fatal("a code filter with code_filter off")
	}
	if w := serve(t, h, "GET", "/nosuch1", ""); w.Code != http.StatusNotFound || w.Header().Get("X-Shortener-Source") != sourceStore {
		t.Errorf("unknown code = %d from %q, want 404 from the store", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	if n := s.scans.Load() + s.deltas.Load(); n != 0 {
		t.Errorf("%d listing queries with code_filter off, want 0", n)
	}
}
