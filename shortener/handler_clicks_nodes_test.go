package shortener

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// Click counting wired into handlers on the real stores, real Redis and
// real PostgreSQL (issue 5's acceptance 1 and 4, flush at shutdown).

const testBrowserUA = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15"

// redirectStatus runs one redirect request through h from any goroutine
// and returns its status (a caddyhttp.HandlerError's status included).
func redirectStatus(ctx context.Context, h *Handler, method, path string, header ...string) int {
	r := httptest.NewRequest(method, "http://sho.rt"+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	ctx = context.WithValue(ctx, caddy.ReplacerCtxKey, caddy.NewReplacer())
	r = r.WithContext(ctx)
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, r, nextHandler); err != nil {
		var he caddyhttp.HandlerError
		if errors.As(err, &he) {
			return he.StatusCode
		}
		return -1
	}
	return w.Code
}

// apiTotal reads a link's click total through GET <api>/links/<code>/stats.
func apiTotal(t *testing.T, h *Handler, code string) clicks.Stats {
	t.Helper()
	var st clicks.Stats
	getJSON(t, h, "/api/links/"+code+"/stats", http.StatusOK, &st)
	return st
}

// startHandler provisions a handler like newHandler but returns its
// Cleanup for the test to call (it also runs at test end if not called).
func startHandler(t *testing.T, configure func(*Handler)) (*Handler, func()) {
	t.Helper()
	h := &Handler{API: "/api", APIKeys: []string{testKey}}
	configure(h)
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	if err := h.Provision(ctx); err != nil {
		cancel()
		t.Fatalf("Provision: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := h.Cleanup(); err != nil {
				t.Errorf("Cleanup: %v", err)
			}
			cancel()
		})
	}
	t.Cleanup(stop)
	return h, stop
}

// Acceptance 1: 10,000 redirects spread over three handler instances that
// share Redis and PostgreSQL are counted exactly once each; HEAD and
// prefetch requests add nothing.
func TestClicksThreeNodesExact(t *testing.T) {
	dsn := testenv.Postgres(t)
	rdb, prefix := testenv.Redis(t)
	redisURL := testenv.RedisURL(t)
	nodes := make([]*Handler, 3)
	for i := range nodes {
		nodes[i] = newHandler(t, nil, func(h *Handler) {
			h.Store, h.DSN = "postgres", dsn
			h.Redis = &redispool.Config{URL: redisURL, KeyPrefix: prefix}
			h.ClicksInterval = caddy.Duration(50 * time.Millisecond)
			h.ClicksBatch = 200
		})
		if nodes[i].clicks == nil {
			t.Fatal("click counting is off")
		}
	}
	codes := make([]string, 3)
	for i := range codes {
		codes[i] = create(t, nodes[i], fmt.Sprintf(`{"long_url":"https://example.com/%d"}`, i)).Code
	}

	const workers, perWorker = 200, 50 // 10,000 counted redirects
	var want [3]struct{ total, bots atomic.Int64 }
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := range perWorker {
				node, link := nodes[(g+i)%3], (g*7+i)%3
				path := "/" + codes[link]
				ua := testBrowserUA
				if i%4 == 0 {
					ua = "Googlebot/2.1 (+http://www.google.com/bot.html)"
				}
				if s := redirectStatus(ctx, node, "GET", path, "User-Agent", ua, "Referer", fmt.Sprintf("https://r%d.example/", i%3)); s != http.StatusFound {
					t.Errorf("GET %s = %d, want 302", path, s)
					return
				}
				want[link].total.Add(1)
				if i%4 == 0 {
					want[link].bots.Add(1)
				}
				if i%10 == 0 { // uncounted requests in between
					for _, hdr := range [][]string{{"Sec-Purpose", "prefetch"}, {"Purpose", "prefetch"}, {"Sec-Purpose", "prefetch;prerender"}} {
						if s := redirectStatus(ctx, node, "GET", path, append(hdr, "User-Agent", testBrowserUA)...); s != http.StatusFound {
							t.Errorf("prefetch GET %s = %d, want 302", path, s)
						}
					}
					if s := redirectStatus(ctx, node, "HEAD", path, "User-Agent", testBrowserUA); s != http.StatusFound {
						t.Errorf("HEAD %s = %d, want 302", path, s)
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var sum int64
	for i := range want {
		sum += want[i].total.Load()
	}
	if sum != workers*perWorker {
		t.Fatalf("sent %d counted redirects, want %d", sum, workers*perWorker)
	}

	total := func() int64 {
		var n int64
		for i, code := range codes {
			n += apiTotal(t, nodes[(i+1)%3], code).Total
		}
		return n
	}
	eventually(t, 30*time.Second, "10,000 clicks counted", func() bool { return total() >= sum })
	time.Sleep(300 * time.Millisecond) // several flush intervals: nothing more arrives
	for i, code := range codes {
		st := apiTotal(t, nodes[i], code)
		if st.Total != want[i].total.Load() || st.Bots != want[i].bots.Load() || st.People != st.Total-st.Bots {
			t.Errorf("link %d stats: total %d people %d bots %d, want total %d bots %d", i, st.Total, st.People, st.Bots,
				want[i].total.Load(), want[i].bots.Load())
		}
		var hourly int64
		for _, hc := range st.Hourly {
			hourly += hc.People + hc.Bots
		}
		if hourly != st.Total {
			t.Errorf("link %d: hourly counts sum to %d, total %d", i, hourly, st.Total)
		}
		var link map[string]any
		getJSON(t, nodes[(i+2)%3], "/api/links/"+code, http.StatusOK, &link)
		if link["clicks"] != float64(st.Total) {
			t.Errorf("link %d: GET clicks = %v, stats total %d", i, link["clicks"], st.Total)
		}
	}
	if n := total(); n != sum {
		t.Errorf("clicks counted over all links = %d, want exactly %d", n, sum)
	}
	for i, h := range nodes {
		if d := h.clicks.Dropped(); d != 0 {
			t.Errorf("node %d dropped %d clicks", i, d)
		}
	}
	// Counted entries leave the stream; nothing stays pending.
	stream := prefix + ":clicks"
	eventually(t, 10*time.Second, "click stream drained", func() bool {
		n, err := rdb.XLen(context.Background(), stream).Result()
		return err == nil && n == 0
	})
	p, err := rdb.XPending(context.Background(), stream, clicks.ClickGroup).Result()
	if err != nil || p.Count != 0 {
		t.Errorf("XPENDING %s = %+v, %v; want nothing pending", stream, p, err)
	}
}

// requestKey marks contexts derived from a test request.
type requestKey struct{}

func fromRequest(ctx context.Context) bool { return ctx.Value(requestKey{}) != nil }

// requestHook counts Redis commands sent on behalf of a request (their
// context derives from the request's).
type requestHook struct{ cmds atomic.Int64 }

func (h *requestHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *requestHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if fromRequest(ctx) {
			h.cmds.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *requestHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if fromRequest(ctx) {
			h.cmds.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// countedClickStore is the PostgreSQL store and its click sink, counting
// every call and the calls made on behalf of a request.
type countedClickStore struct {
	link.Store
	sink              clicks.Sink
	calls, forRequest atomic.Int64
}

func (c *countedClickStore) count(ctx context.Context) {
	c.calls.Add(1)
	if fromRequest(ctx) {
		c.forRequest.Add(1)
	}
}

func (c *countedClickStore) Get(ctx context.Context, code string) (link.Link, error) {
	c.count(ctx)
	return c.Store.Get(ctx, code)
}

func (c *countedClickStore) Create(ctx context.Context, l link.Link) error {
	c.count(ctx)
	return c.Store.Create(ctx, l)
}

func (c *countedClickStore) Revoke(ctx context.Context, code string, at time.Time) error {
	c.count(ctx)
	return c.Store.Revoke(ctx, code, at)
}

func (c *countedClickStore) NextBlock(ctx context.Context, size int64) (int64, error) {
	c.count(ctx)
	return c.Store.NextBlock(ctx, size)
}

func (c *countedClickStore) ApplyClicks(ctx context.Context, batches []clicks.Batch) (int, error) {
	c.count(ctx)
	return c.sink.ApplyClicks(ctx, batches)
}

func (c *countedClickStore) ClickStats(ctx context.Context, code string, from, to time.Time) (clicks.Stats, error) {
	c.count(ctx)
	return c.sink.ClickStats(ctx, code, from, to)
}

func (c *countedClickStore) ClickTotal(ctx context.Context, code string) (int64, error) {
	c.count(ctx)
	return c.sink.ClickTotal(ctx, code)
}

func (c *countedClickStore) ClickBreakdown(ctx context.Context, code, dim string, from, to time.Time, limit int) ([]clicks.BreakdownEntry, error) {
	c.count(ctx)
	return c.sink.ClickBreakdown(ctx, code, dim, from, to, limit)
}

func (c *countedClickStore) ClickOverview(ctx context.Context, from, to time.Time, limit int) (clicks.Overview, error) {
	c.count(ctx)
	return c.sink.ClickOverview(ctx, from, to, limit)
}

func (c *countedClickStore) Close() error { return nil }

// Acceptance 4: serving a cached link, the redirect path does no network
// I/O for counting. Redis and PostgreSQL sit behind fault proxies that are
// then stalled: a handler that waited on either for a click would hang
// (Redis read timeout 20s, store deadline 3s) and fail the 2s bound per
// request; every Redis command and store call made with a request's
// context is counted and must stay at zero. The clicks are delivered once
// the proxies pass traffic again.
func TestClicksRedirectPathNoNetworkIO(t *testing.T) {
	_, prefix := testenv.Redis(t)
	redisProxy := testenv.StartFaultProxy(t, testenv.RedisAddr(t))
	pgURL, err := url.Parse(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	pgProxy := testenv.StartFaultProxy(t, pgURL.Host)
	pgURL.Host = pgProxy.Addr()
	pool, err := pgpool.Get(pgURL.String(), pgpool.Settings{StatementTimeout: 2 * time.Second, ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Release() })
	octx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pg, err := store.OpenPostgres(octx, pool.Pool)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := clickSinkFor(pg, 0)
	if err != nil {
		t.Fatal(err)
	}
	store := &countedClickStore{Store: pg, sink: sink}
	h := newHandler(t, store, func(h *Handler) {
		h.Redis = &redispool.Config{
			URL: "redis://" + redisProxy.Addr(), KeyPrefix: prefix,
			ReadTimeout: caddy.Duration(20 * time.Second), WriteTimeout: caddy.Duration(20 * time.Second),
		}
		h.LocalCacheTTL = caddy.Duration(time.Hour)
		h.ClicksInterval = caddy.Duration(20 * time.Millisecond)
	})
	if h.clicks == nil {
		t.Fatal("click counting is off")
	}
	hook := new(requestHook)
	h.rdb.AddHook(hook)

	code := create(t, h, `{"long_url":"https://example.com/cached"}`).Code
	// The create's invalidation comes back to this instance too, over
	// pub/sub, and drops the code from L1 whenever it lands: wait for it
	// (the create's own drop and the echo: two epochs) before filling L1.
	eventually(t, 10*time.Second, "the create's invalidation echoed back", func() bool {
		return h.cache.epoch(code) >= 2
	})
	reqCtx := context.WithValue(context.Background(), requestKey{}, true)
	if s := redirectStatus(reqCtx, h, "GET", "/"+code, "User-Agent", testBrowserUA); s != http.StatusFound {
		t.Fatalf("first redirect = %d", s)
	}
	if _, ok := h.cache.local(code); !ok {
		t.Fatal("the link is not in the local cache after its first redirect")
	}
	eventually(t, 20*time.Second, "the first click counted", func() bool {
		n, err := sink.ClickTotal(context.Background(), code)
		return err == nil && n == 1
	})

	redisProxy.Set(testenv.Stalled)
	pgProxy.Set(testenv.Stalled)
	redisBefore, storeBefore, storeCalls := hook.cmds.Load(), store.forRequest.Load(), store.calls.Load()
	const workers, perWorker = 30, 10
	var slow atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				start := time.Now()
				s := redirectStatus(reqCtx, h, "GET", "/"+code, "User-Agent", testBrowserUA, "Referer", "https://ref.example/")
				if s != http.StatusFound {
					t.Errorf("redirect with Redis and PostgreSQL stalled = %d, want 302", s)
				}
				if time.Since(start) > 2*time.Second {
					slow.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := slow.Load(); n > 0 {
		t.Errorf("%d redirects of a cached link took over 2s with Redis and PostgreSQL stalled: they waited on the network", n)
	}
	if n := hook.cmds.Load() - redisBefore; n != 0 {
		t.Errorf("%d Redis commands sent on behalf of redirects of a cached link, want 0", n)
	}
	if n := store.forRequest.Load() - storeBefore; n != 0 {
		t.Errorf("%d store calls made on behalf of redirects of a cached link, want 0", n)
	}
	if n := store.calls.Load() - storeCalls; n != 0 {
		t.Errorf("%d store calls while PostgreSQL was stalled, want 0 (the consumer waits on stalled Redis)", n)
	}

	redisProxy.Set(testenv.Pass)
	pgProxy.Set(testenv.Pass)
	const want = 1 + workers*perWorker
	eventually(t, 30*time.Second, "the clicks recorded during the stall counted", func() bool {
		n, err := sink.ClickTotal(context.Background(), code)
		if n > want {
			t.Fatalf("counted %d clicks, more than the %d made", n, want)
		}
		return err == nil && n == want
	})
	if d := h.clicks.Dropped(); d != 0 {
		t.Errorf("dropped %d clicks", d)
	}
}

// Clicks buffered when the handler is cleaned up (shutdown or reload) are
// flushed, not lost: the next handler on the same store counts them.
func TestClicksFlushedOnCleanup(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(t *testing.T) func(*Handler)
	}{
		{"embedded", func(t *testing.T) func(*Handler) {
			path := filepath.Join(t.TempDir(), "links.db")
			return func(h *Handler) { h.Store, h.Path = "embedded", path }
		}},
		{"postgres", func(t *testing.T) func(*Handler) {
			dsn := testenv.Postgres(t)
			return func(h *Handler) { h.Store, h.DSN = "postgres", dsn }
		}},
		{"postgres+redis", func(t *testing.T) func(*Handler) {
			dsn := testenv.Postgres(t)
			_, prefix := testenv.Redis(t)
			redisURL := testenv.RedisURL(t)
			return func(h *Handler) {
				h.Store, h.DSN = "postgres", dsn
				h.Redis = &redispool.Config{URL: redisURL, KeyPrefix: prefix}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.configure(t)
			configure := func(h *Handler) {
				base(h)
				// Nothing leaves before Cleanup: no interval flush, no
				// full batch.
				h.ClicksInterval = caddy.Duration(time.Hour)
				h.ClicksBatch = 1000
			}
			first, stop := startHandler(t, configure)
			code := create(t, first, `{"long_url":"https://example.com/flush"}`).Code
			const n = 137
			for range n {
				if s := redirectStatus(context.Background(), first, "GET", "/"+code, "User-Agent", testBrowserUA); s != http.StatusFound {
					t.Fatalf("redirect = %d", s)
				}
			}
			if st := apiTotal(t, first, code); st.Total != 0 {
				t.Fatalf("%d clicks counted before Cleanup; the test needs them buffered", st.Total)
			}
			stop()

			second, _ := startHandler(t, configure)
			eventually(t, 20*time.Second, "buffered clicks counted after Cleanup", func() bool {
				return apiTotal(t, second, code).Total >= n
			})
			if st := apiTotal(t, second, code); st.Total != n {
				t.Errorf("after Cleanup: %d clicks counted, want %d", st.Total, n)
			}
		})
	}
}
