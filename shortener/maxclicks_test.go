package shortener

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// TestMaxClicksBound: a link with max_clicks 100 under 500 concurrent GETs
// spread over two handlers serves exactly 100 redirects and 400 410s; the
// store counted 100; after it every request answers 410, HEAD and bots
// included, and the API shows 0 remaining. On PostgreSQL with Redis (two
// nodes, each with its own pool) and on the embedded store (two handlers
// in one process sharing the file, as the handler does).
func TestMaxClicksBound(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		dsn, url := testenv.Postgres(t), testenv.RedisURL(t)
		_, prefix := testenv.Redis(t)
		mk := func(name string) *Handler {
			s, _ := openPostgresOwn(t, dsn, pgpool.Settings{StatementTimeout: 5 * time.Second, ApplicationName: name})
			return newHandler(t, s, func(h *Handler) { h.Redis = &redispool.Config{URL: url, KeyPrefix: prefix} })
		}
		checkMaxClicks(t, mk("node-a"), mk("node-b"))
	})
	t.Run("embedded", func(t *testing.T) {
		// Provisioned from their config, as Caddy does: the two share the
		// open file (sharedStore).
		path := filepath.Join(t.TempDir(), "links.db")
		mk := func() *Handler {
			h := &Handler{Path: path, API: "/api", APIKeys: []string{testKey}}
			if err := provision(t, h); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := h.Cleanup(); err != nil {
					t.Errorf("Cleanup: %v", err)
				}
			})
			return h
		}
		checkMaxClicks(t, mk(), mk())
	})
}

func checkMaxClicks(t *testing.T, a, b *Handler) {
	t.Helper()
	out := create(t, a, `{"long_url":"https://example.com/limited","code":"limited","max_clicks":100}`)
	// b learns the code (Redis pub/sub, or its code filter's delta sync).
	eventually(t, 10*time.Second, "b knows the code", func() bool { return b.cache.codes.mayExist("limited") })
	const n = 500
	var found, gone, other atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		h := a
		if i%2 == 1 {
			h = b
		}
		wg.Go(func() {
			<-start
			w := serve(t, h, "GET", "/limited", "")
			switch {
			case w.Code == http.StatusFound && w.Header().Get("Location") == out.LongURL:
				found.Add(1)
			case w.Code == http.StatusGone:
				gone.Add(1)
			default:
				other.Add(1)
				t.Errorf("GET = %d %q", w.Code, w.Header().Get("Location"))
			}
		})
	}
	close(start)
	wg.Wait()
	if found.Load() != 100 || gone.Load() != n-100 || other.Load() != 0 {
		t.Fatalf("%d redirects, %d 410, %d other; want exactly 100 redirects and %d 410", found.Load(), gone.Load(), other.Load(), n-100)
	}
	for _, h := range []*Handler{a, b} {
		for _, req := range [][]string{{"GET"}, {"HEAD"}, {"GET", "User-Agent", "Slackbot-LinkExpanding 1.0"}} {
			if w := serve(t, h, req[0], "/limited", "", req[1:]...); w.Code != http.StatusGone {
				t.Errorf("%v after exhaustion = %d, want 410", req, w.Code)
			}
		}
	}
	l, err := a.store.Get(context.Background(), "limited")
	if err != nil || l.ClicksServed != 100 {
		t.Errorf("stored ClicksServed = %d, %v, want 100", l.ClicksServed, err)
	}
	w := serve(t, a, "GET", "/api/links/limited", "", auth()...)
	var got link.Response
	if w.Code != http.StatusOK || decodeJSON(w.Body.Bytes(), &got) != nil || got.RemainingClicks == nil || *got.RemainingClicks != 0 {
		t.Errorf("GET api = %d %s, want remaining_clicks 0", w.Code, w.Body)
	}
}

// TestMaxClicksHeadCounts: HEAD serves a redirect and so counts, as GET
// does; a plain link on the same handler is not counted.
func TestMaxClicksHeadCounts(t *testing.T) {
	s := newMemStore()
	h := newHandler(t, s, nil)
	create(t, h, `{"long_url":"https://example.com/two","code":"two","max_clicks":2}`)
	create(t, h, `{"long_url":"https://example.com/plain","code":"plain"}`)
	for i, want := range []int{302, 302, 410, 410} {
		method := "HEAD"
		if i%2 == 1 {
			method = "GET"
		}
		if w := serve(t, h, method, "/two", ""); w.Code != want {
			t.Errorf("request %d (%s) = %d, want %d", i, method, w.Code, want)
		}
	}
	for range 5 {
		serve(t, h, "GET", "/plain", "")
	}
	if l, _ := s.Get(context.Background(), "plain"); l.ClicksServed != 0 {
		t.Errorf("plain link counted %d, want 0", l.ClicksServed)
	}
}

// TestMaxClicksCounterDown: with the counter's store unreachable a
// max_clicks link answers 503 (and serves nothing), while links without
// max_clicks keep redirecting from the caches. PostgreSQL with its pool
// closed, and the test store switched off.
func TestMaxClicksCounterDown(t *testing.T) {
	check := func(t *testing.T, h *Handler, down func()) {
		t.Helper()
		create(t, h, `{"long_url":"https://example.com/lim","code":"lim","max_clicks":10}`)
		create(t, h, `{"long_url":"https://example.com/free","code":"free"}`)
		for _, code := range []string{"lim", "free"} { // into L1
			if w := serve(t, h, "GET", "/"+code, ""); w.Code != http.StatusFound {
				t.Fatalf("GET /%s = %d", code, w.Code)
			}
		}
		down()
		if w := serve(t, h, "GET", "/lim", ""); w.Code != http.StatusServiceUnavailable || w.Header().Get("Location") != "" {
			t.Errorf("GET /lim with the counter down = %d %q, want 503 without Location", w.Code, w.Header().Get("Location"))
		}
		if w := serve(t, h, "GET", "/free", ""); w.Code != http.StatusFound {
			t.Errorf("GET /free with the store down = %d, want 302 from L1", w.Code)
		}
	}
	t.Run("memory", func(t *testing.T) {
		s := newMemStore()
		check(t, newHandler(t, s, nil), func() { s.down.Store(true) })
	})
	t.Run("postgres", func(t *testing.T) {
		s, pool := openPostgresOwn(t, testenv.Postgres(t), pgpool.Settings{StatementTimeout: 2 * time.Second, ApplicationName: "counter-down"})
		// Clicks off: with the pool closed, clicks could not be flushed at cleanup.
		check(t, newHandler(t, s, func(h *Handler) { h.ClicksOff = true }), func() { pool.Close() })
	})
}

func decodeJSON(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding %s: %w", b, err)
	}
	return nil
}
