package shortener

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// Tests of issue 4's acceptance list: two handler instances (two nodes)
// sharing a real Redis and a real PostgreSQL.

// nodeStore opens the PostgreSQL store at dsn, counted; the pool is
// released when the test ends.
func nodeStore(t *testing.T, dsn string) (*countingStore, *pgxpool.Pool) {
	t.Helper()
	s, pool := openPostgresOwn(t, dsn, pgpool.Settings{StatementTimeout: 2 * time.Second, ConnectTimeout: time.Second})
	return &countingStore{Store: s}, pool
}

// openPostgresOwn opens the PostgreSQL store at dsn on a pool of its own
// (settings as given), released when tb ends.
func openPostgresOwn(tb testing.TB, dsn string, set pgpool.Settings) (*store.PostgresStore, *pgxpool.Pool) {
	tb.Helper()
	p, err := pgpool.Get(dsn, set)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Release() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.OpenPostgres(ctx, p.Pool)
	if err != nil {
		tb.Fatal(err)
	}
	return s, p.Pool
}

// twoNodes provisions two handlers on one store and the Redis at redisURL
// under prefix.
func twoNodes(t *testing.T, s link.Store, redisURL, prefix string, configure func(*Handler)) (*Handler, *Handler) {
	t.Helper()
	mk := func() *Handler {
		return newHandler(t, s, func(h *Handler) {
			h.Redis = &redispool.Config{URL: redisURL, KeyPrefix: prefix}
			h.SourceHeader = true
			if configure != nil {
				configure(h)
			}
		})
	}
	return mk(), mk()
}

func sharedServices(t *testing.T) (*countingStore, *pgxpool.Pool, string, string) {
	t.Helper()
	_, prefix := testenv.Redis(t)
	s, pool := nodeStore(t, testenv.Postgres(t))
	return s, pool, testenv.RedisURL(t), prefix
}

func countLinks(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM shortener_links`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Acceptance 1.
func TestNodesCreateThenRedirectElsewhere(t *testing.T) {
	s, _, url, prefix := sharedServices(t)
	a, b := twoNodes(t, s, url, prefix, nil)
	long := "https://example.com/landing?utm=x&y=%20z"
	out := create(t, a, fmt.Sprintf(`{"long_url":%q}`, long))
	w := serve(t, b, "GET", "/"+out.Code, "")
	if w.Code != http.StatusFound || w.Header().Get("Location") != long {
		t.Fatalf("GET on the other node = %d Location %q, want 302 %q", w.Code, w.Header().Get("Location"), long)
	}
	if src := w.Header().Get("X-Shortener-Source"); src != "redis" {
		t.Errorf("source %q, want redis (written through at creation)", src)
	}
	if n := s.gets.Load(); n != 0 {
		t.Errorf("store Get called %d times, want 0", n)
	}

	// A code both nodes had cached as unknown answers once created.
	for _, h := range []*Handler{a, b} {
		if w := serve(t, h, "GET", "/soon-here", ""); w.Code != http.StatusNotFound {
			t.Fatalf("before create = %d", w.Code)
		}
	}
	create(t, a, `{"long_url":"https://example.com/soon","code":"soon-here"}`)
	if w := serve(t, a, "GET", "/soon-here", ""); w.Code != http.StatusFound {
		t.Errorf("creating node right after 201 = %d, want 302", w.Code)
	}
	eventually(t, time.Second, "the other node drops its negative entry", func() bool {
		return serve(t, b, "GET", "/soon-here", "").Code == http.StatusFound
	})
}

// Acceptance 2.
func TestNodesUnknownQueriedOnce(t *testing.T) {
	s, _, url, prefix := sharedServices(t)
	a, b := twoNodes(t, s, url, prefix, nil)
	for i, h := range []*Handler{a, a, b, b} {
		w := serve(t, h, "GET", "/unknown1", "")
		if w.Code != http.StatusNotFound {
			t.Errorf("#%d = %d, want 404", i, w.Code)
		}
	}
	if n := s.gets.Load(); n != 1 {
		t.Errorf("store Get called %d times, want 1", n)
	}
	if got := redirectsMetric(b, "redis", "not_found"); got != 1 {
		t.Errorf("node b redis not_found = %v, want 1", got)
	}
}

// Acceptance 3.
func TestNodesConcurrentCreates(t *testing.T) {
	for _, mode := range []string{"random", "sequential"} {
		t.Run(mode, func(t *testing.T) {
			s, pool, url, prefix := sharedServices(t)
			const blockSize = 100
			a, b := twoNodes(t, s, url, prefix, func(h *Handler) { h.Codes = mode; h.BlockSize = blockSize })
			nodes := []*Handler{a, b}
			const n = 1000
			codes := make([]string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					w := serve(t, nodes[i%2], "POST", "/api/links", fmt.Sprintf(`{"long_url":"https://example.com/%d"}`, i), auth()...)
					if w.Code != http.StatusCreated {
						t.Errorf("create %d = %d %s", i, w.Code, w.Body)
						return
					}
					var out link.Response
					_ = json.Unmarshal(w.Body.Bytes(), &out)
					codes[i] = out.Code
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			seen := map[string]bool{}
			for _, c := range codes {
				if seen[c] {
					t.Fatalf("code %q issued twice", c)
				}
				seen[c] = true
			}
			if got := countLinks(t, pool); got != n {
				t.Errorf("%d links stored, want %d", got, n)
			}
			for i, c := range codes {
				w := serve(t, nodes[(i+1)%2], "GET", "/"+c, "")
				if w.Code != http.StatusFound || w.Header().Get("Location") != fmt.Sprintf("https://example.com/%d", i) {
					t.Fatalf("GET /%s on the other node = %d %q", c, w.Code, w.Header().Get("Location"))
				}
			}
			if mode != "sequential" {
				return
			}
			for k, node := range nodes {
				var ids []int64
				for i, c := range codes {
					if len(c) != 7 {
						t.Fatalf("sequential code %q is not 7 characters", c)
					}
					id, ok := link.SequentialID(c)
					if !ok {
						t.Fatalf("%q is not a sequential code", c)
					}
					if i%2 == k {
						ids = append(ids, id)
					}
				}
				_ = node
				slices.Sort(ids)
				// A node's IDs are whole blocks of consecutive IDs, but for
				// its last, partly used block.
				run, runs := 1, 0
				for i := 1; i <= len(ids); i++ {
					if i < len(ids) && ids[i] == ids[i-1]+1 {
						run++
						continue
					}
					runs++
					if i < len(ids) && run%blockSize != 0 {
						t.Fatalf("node %d: a run of %d consecutive IDs ends at %d, not a multiple of block_size %d", k, run, ids[i-1], blockSize)
					}
					run = 1
				}
				if runs > n/2/blockSize+1 {
					t.Errorf("node %d: %d runs of IDs for %d codes", k, runs, len(ids))
				}
			}
			if calls := s.blocks.Load(); calls > n/blockSize+2 {
				t.Errorf("NextBlock called %d times for %d codes in blocks of %d", calls, n, blockSize)
			}
		})
	}
}

// Acceptance 4.
func TestNodesDangerousURLs(t *testing.T) {
	s, pool, url, prefix := sharedServices(t)
	a, _ := twoNodes(t, s, url, prefix, func(h *Handler) { h.DenyHosts = []string{"*.evil.example"} })
	for _, long := range []string{
		"javascript:alert(1)",
		"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
		"file:///etc/passwd",
		"https://example.com/\r\nSet-Cookie: a=b",
		"https://example.com/" + strings.Repeat("a", 2100),
		"https://sho.rt/abc1234",
		"https://login.evil.example/",
	} {
		body, _ := json.Marshal(map[string]string{"long_url": long})
		w := serve(t, a, "POST", "/api/links", string(body), auth()...)
		if w.Code != http.StatusBadRequest || !strings.Contains(errorOf(t, w.Body.Bytes()), "long_url") {
			t.Errorf("POST %.60q = %d %s, want 400 naming long_url", long, w.Code, w.Body)
		}
	}
	if n := s.creates.Load(); n != 0 {
		t.Errorf("store Create called %d times, want 0", n)
	}
	if n := countLinks(t, pool); n != 0 {
		t.Errorf("%d links stored, want 0", n)
	}
}

// Acceptance 5.
func TestNodesDeleteAndExpiry(t *testing.T) {
	s, _, url, prefix := sharedServices(t)
	clock := newFakeClock(time.Now())
	a, b := twoNodes(t, s, url, prefix, func(h *Handler) { h.now = clock.Now })
	out := create(t, a, `{"long_url":"https://example.com/del"}`)
	for _, h := range []*Handler{a, b, a, b} { // the second round hits L1
		if w := serve(t, h, "GET", "/"+out.Code, ""); w.Code != http.StatusFound {
			t.Fatalf("before delete = %d", w.Code)
		}
	}
	if w := serve(t, a, "DELETE", "/api/links/"+out.Code, "", auth()...); w.Code != http.StatusNoContent {
		t.Fatalf("DELETE = %d %s", w.Code, w.Body)
	}
	if w := serve(t, a, "GET", "/"+out.Code, ""); w.Code != http.StatusGone {
		t.Errorf("deleting node = %d, want 410", w.Code)
	}
	eventually(t, time.Second, "the other node answers 410", func() bool {
		return serve(t, b, "GET", "/"+out.Code, "").Code == http.StatusGone
	})
	// A third node, started after the delete, learns it from Redis.
	c := newHandler(t, s, func(h *Handler) { h.Redis = &redispool.Config{URL: url, KeyPrefix: prefix}; h.now = clock.Now })
	if w := serve(t, c, "GET", "/"+out.Code, ""); w.Code != http.StatusGone {
		t.Errorf("new node = %d, want 410", w.Code)
	}

	exp := clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	out = create(t, a, fmt.Sprintf(`{"long_url":"https://example.com/exp","expires_at":%q}`, exp))
	for _, h := range []*Handler{a, b} {
		if w := serve(t, h, "GET", "/"+out.Code, ""); w.Code != http.StatusFound {
			t.Fatalf("before expiry = %d", w.Code)
		}
	}
	clock.Advance(time.Hour + time.Second)
	for _, h := range []*Handler{a, b, c} {
		if w := serve(t, h, "GET", "/"+out.Code, ""); w.Code != http.StatusGone {
			t.Errorf("after expiry = %d, want 410", w.Code)
		}
	}
}

// Acceptance 6, Redis half.
func TestNodesRedisStopped(t *testing.T) {
	srv := testenv.StartRedis(t)
	s, _ := nodeStore(t, testenv.Postgres(t))
	a, b := twoNodes(t, s, srv.URL(), "sl", nil)
	out := create(t, a, `{"long_url":"https://example.com/r"}`)
	srv.Stop()
	start := time.Now()
	w := serve(t, b, "GET", "/"+out.Code, "")
	if w.Code != http.StatusFound || w.Header().Get("X-Shortener-Source") != "store" {
		t.Fatalf("with Redis stopped = %d source %q, want 302 from the store", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("lookup with Redis down took %v", d)
	}
	if w := serve(t, b, "GET", "/unknown9", ""); w.Code != http.StatusNotFound {
		t.Errorf("unknown with Redis stopped = %d, want 404", w.Code)
	}
	out2 := create(t, a, `{"long_url":"https://example.com/r2"}`)
	if w := serve(t, b, "GET", "/"+out2.Code, ""); w.Code != http.StatusFound {
		t.Errorf("link created with Redis stopped = %d, want 302", w.Code)
	}
	srv.Start()
	eventually(t, 10*time.Second, "redirects come from Redis again", func() bool {
		out := create(t, a, `{"long_url":"https://example.com/r3"}`)
		return serve(t, b, "GET", "/"+out.Code, "").Header().Get("X-Shortener-Source") == "redis"
	})
}

// Acceptance 6, PostgreSQL half.
func TestNodesPostgresStopped(t *testing.T) {
	pg := testenv.StartPostgres(t)
	s, pool := nodeStore(t, pg.DSN())
	_, prefix := testenv.Redis(t)
	a, b := twoNodes(t, s, testenv.RedisURL(t), prefix, nil)
	inL1 := create(t, a, `{"long_url":"https://example.com/l1"}`)
	eventually(t, 2*time.Second, "node b holds the link in L1", func() bool {
		return serve(t, b, "GET", "/"+inL1.Code, "").Header().Get("X-Shortener-Source") == "local"
	})
	inRedis := create(t, a, `{"long_url":"https://example.com/redis"}`)
	before := countLinks(t, pool)
	// The throwaway server runs with synchronous_commit=off and stops
	// immediately: make the committed rows durable first.
	if _, err := pool.Exec(context.Background(), "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	pg.Stop()

	for code, src := range map[string]string{inL1.Code: "local", inRedis.Code: "redis"} {
		w := serve(t, b, "GET", "/"+code, "")
		if w.Code != http.StatusFound || w.Header().Get("X-Shortener-Source") != src {
			t.Errorf("cached link with PostgreSQL stopped = %d source %q, want 302 from %s", w.Code, w.Header().Get("X-Shortener-Source"), src)
		}
	}
	for range 2 {
		if w := serve(t, b, "GET", "/unknown7", ""); w.Code != http.StatusServiceUnavailable {
			t.Errorf("unknown code with PostgreSQL stopped = %d, want 503", w.Code)
		}
	}
	for _, body := range []string{`{"long_url":"https://example.com/new"}`, `{"long_url":"https://example.com/new","code":"custom-new"}`} {
		w := serve(t, a, "POST", "/api/links", body, auth()...)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("create with PostgreSQL stopped = %d %s, want 503 JSON", w.Code, w.Body)
		} else {
			errorOf(t, w.Body.Bytes())
		}
	}
	seq := newHandler(t, s, func(h *Handler) { h.Codes = "sequential" })
	if w := serve(t, seq, "POST", "/api/links", `{"long_url":"https://example.com/seq"}`, auth()...); w.Code != http.StatusServiceUnavailable {
		t.Errorf("sequential create with PostgreSQL stopped = %d, want 503", w.Code)
	}

	pg.Start()
	eventually(t, 15*time.Second, "PostgreSQL answers again", func() bool {
		return pool.Ping(context.Background()) == nil
	})
	if after := countLinks(t, pool); after != before {
		t.Errorf("%d links after the outage, %d before: something was half-written", after, before)
	}
	// The 503s were not cached: the unknown code is a plain 404 now, and the
	// custom code is free.
	if w := serve(t, b, "GET", "/unknown7", ""); w.Code != http.StatusNotFound {
		t.Errorf("unknown after recovery = %d, want 404", w.Code)
	}
	create(t, a, `{"long_url":"https://example.com/new","code":"custom-new"}`)
}

// Acceptance 7.
func TestNodesConcurrentRedirectsOneQuery(t *testing.T) {
	s, _, url, prefix := sharedServices(t)
	a, _ := twoNodes(t, s, url, prefix, nil)
	ctx := context.Background()
	if err := s.Store.Create(ctx, link.Link{Code: "viral42", LongURL: "https://example.com/viral", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	statuses := make([]int, 1000)
	for i := range statuses {
		wg.Go(func() { statuses[i] = serve(t, a, "GET", "/viral42", "").Code })
	}
	wg.Wait()
	for i, st := range statuses {
		if st != http.StatusFound {
			t.Fatalf("request %d = %d, want 302", i, st)
		}
	}
	if n := s.gets.Load(); n != 1 {
		t.Errorf("store Get called %d times for 1000 concurrent redirects, want 1", n)
	}
}

// fakeClock is a settable clock shared by handlers.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Redis slow (past the 50ms read deadline) and the store down: a link held
// by Redis still redirects, since Redis gets a second, longer chance before
// the lookup answers 503.
func TestNodesSlowRedisAndStoreDown(t *testing.T) {
	_, prefix := testenv.Redis(t)
	proxy := testenv.StartFaultProxy(t, testenv.RedisAddr(t))
	s := newMemStore()
	h := newHandler(t, s, func(h *Handler) {
		h.Redis = &redispool.Config{URL: "redis://" + proxy.Addr() + "/0", KeyPrefix: prefix}
		h.LocalCacheOff = true
		h.SourceHeader = true
	})
	out := create(t, h, `{"long_url":"https://example.com/slow"}`)
	proxy.SetLatency(150 * time.Millisecond)
	if w := serve(t, h, "GET", "/"+out.Code, ""); w.Code != http.StatusFound || w.Header().Get("X-Shortener-Source") != "store" {
		t.Errorf("slow Redis, store up = %d from %q, want 302 from the store", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	s.down.Store(true)
	if w := serve(t, h, "GET", "/"+out.Code, ""); w.Code != http.StatusFound || w.Header().Get("X-Shortener-Source") != "redis" {
		t.Errorf("slow Redis, store down = %d from %q, want 302 from Redis", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	if w := serve(t, h, "GET", "/unknown5", ""); w.Code != http.StatusServiceUnavailable {
		t.Errorf("unknown code, slow Redis, store down = %d, want 503", w.Code)
	}
}

// The same cache, negative entries and invalidation on a Redis Cluster:
// PUBLISH reaches subscribers on every node.
func TestNodesRedisCluster(t *testing.T) {
	_, prefix := testenv.RedisCluster(t)
	addrs := testenv.RedisClusterAddrs(t)
	s, _ := nodeStore(t, testenv.Postgres(t))
	mk := func() *Handler {
		return newHandler(t, s, func(h *Handler) {
			h.Redis = &redispool.Config{Addresses: addrs, Cluster: true, KeyPrefix: prefix}
			h.SourceHeader = true
		})
	}
	a, b := mk(), mk()
	out := create(t, a, `{"long_url":"https://example.com/cluster"}`)
	if w := serve(t, b, "GET", "/"+out.Code, ""); w.Code != http.StatusFound || w.Header().Get("X-Shortener-Source") != "redis" {
		t.Fatalf("other node = %d from %q, want 302 from Redis", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	serve(t, b, "GET", "/"+out.Code, "") // now in b's L1
	if w := serve(t, a, "DELETE", "/api/links/"+out.Code, "", auth()...); w.Code != http.StatusNoContent {
		t.Fatalf("DELETE = %d %s", w.Code, w.Body)
	}
	eventually(t, time.Second, "the other node answers 410", func() bool {
		return serve(t, b, "GET", "/"+out.Code, "").Code == http.StatusGone
	})
	for range 2 {
		if w := serve(t, b, "GET", "/unknown3", ""); w.Code != http.StatusNotFound {
			t.Errorf("unknown = %d", w.Code)
		}
	}
	if w := serve(t, a, "GET", "/unknown3", ""); w.Code != http.StatusNotFound || w.Header().Get("X-Shortener-Source") != "redis" {
		t.Errorf("unknown on the first node = %d from %q, want a negative entry from Redis", w.Code, w.Header().Get("X-Shortener-Source"))
	}
	if n := s.gets.Load(); n != 1 {
		t.Errorf("store Get called %d times, want 1", n)
	}
}
