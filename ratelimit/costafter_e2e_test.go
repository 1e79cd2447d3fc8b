package ratelimit

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// llmUpstream is a real upstream reporting the tokens each answer used:
// /header in X-Tokens-Used, /trailer as an announced trailer after a
// streamed body, /unannounced as a trailer it never announced, /hangs
// streams until its client is gone (its trailer never sent).
func llmUpstream(t *testing.T) (*httptest.Server, chan struct{}) {
	hung := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		flush := func() { _ = http.NewResponseController(w).Flush() }
		switch strings.TrimPrefix(r.URL.Path, "/api") {
		case "/header":
			w.Header().Set("X-Tokens-Used", "100")
			_, _ = io.WriteString(w, "answer")
		case "/trailer":
			w.Header().Set("Trailer", "X-Tokens-Used")
			_, _ = io.WriteString(w, "part one,")
			flush()
			_, _ = io.WriteString(w, "part two")
			w.Header().Set("X-Tokens-Used", "300")
		case "/unannounced":
			_, _ = io.WriteString(w, "streamed")
			flush()
			w.Header().Set(http.TrailerPrefix+"X-Tokens-Used", "200")
		case "/hangs":
			w.Header().Set("Trailer", "X-Tokens-Used")
			_, _ = io.WriteString(w, "thinking")
			flush()
			<-r.Context().Done()
			hung <- struct{}{}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, hung
}

// redisWindow is the fixed window of w the shared Redis's clock is in.
func redisWindow(t *testing.T, c *redis.Client, w time.Duration) int64 {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixNano() / int64(w)
}

// inOneWindow runs run until it ran within one fixed window of w on the
// Redis clock (a run across a window boundary sees two quotas).
func inOneWindow(t *testing.T, c *redis.Client, w time.Duration, run func(attempt int) bool) {
	t.Helper()
	for attempt := range 3 {
		before := redisWindow(t, c, w)
		ok := run(attempt)
		if redisWindow(t, c, w) == before {
			if !ok {
				t.FailNow()
			}
			return
		}
	}
	t.Fatal("three runs crossed a window boundary")
}

// TestCostAfterE2E: a real Caddy in front of a real upstream (through
// reverse_proxy, streamed): an upstream reporting 100 tokens per request
// against events 1000 window 1m fixed_window serves exactly 10 sequential
// requests; trailers, announced or not, are read; an upstream that fails
// or a client that hangs up before the trailer is charged the fallback.
func TestCostAfterE2E(t *testing.T) {
	c, prefix := testenv.Redis(t)
	// The requests of a key must share one fixed window of a minute.
	testenv.AwayFromWindowEnd(t, time.Minute, 10*time.Second)
	up, hung := llmUpstream(t)
	tester, port := startCaddy(t, "", fmt.Sprintf(`
http://localhost:$PORT {
	ratelimit {
		zone tokens {
			key {http.request.header.X-API-Key}
			events 1000
			window 1m
			algorithm fixed_window
			cost_after {http.response.header.X-Tokens-Used} fallback 7
		}
		redis {
			url %s
			key_prefix %s
		}
		headers legacy
		timeout 2s
		on_error closed
	}
	handle /dead/* {
		reverse_proxy 127.0.0.1:%d
	}
	reverse_proxy %s {
		flush_interval -1
	}
}
`, testenv.RedisURL(t), prefix, testenv.FreePort(t), strings.TrimPrefix(up.URL, "http://")))
	base := fmt.Sprintf("http://localhost:%d", port)
	send := func(ctx context.Context, path, key string) (int, http.Header) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		req.Header.Set("X-API-Key", key)
		res, err := tester.Client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		return res.StatusCode, res.Header
	}
	// charged is the units the store holds for key in this window.
	charged := func(key string) int64 {
		t.Helper()
		v, err := c.Get(context.Background(), limiter.StoreKey(prefix, "tokens", "", key)).Result()
		if f := strings.Fields(v); err == nil && len(f) == 3 {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			return n
		}
		return -1
	}

	inOneWindow(t, c, time.Minute, func(attempt int) bool {
		key := "acceptance-" + strconv.Itoa(attempt)
		var statuses []int
		for range 11 {
			s, _ := send(context.Background(), "/header", key)
			statuses = append(statuses, s)
		}
		want := []int{200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 429}
		if fmt.Sprint(statuses) != fmt.Sprint(want) {
			t.Errorf("11 requests of 100 tokens against 1000: %v, want %v", statuses, want)
			return false
		}
		return true
	})

	inOneWindow(t, c, time.Minute, func(attempt int) bool {
		k := strconv.Itoa(attempt)
		ok := true
		for _, tc := range []struct {
			path string
			want int64
		}{
			{"/trailer", 300},
			{"/unannounced", 200},
			{"/dead/x", 7}, // 502: the fallback
		} {
			send(context.Background(), tc.path, tc.path+k)
			if got := charged(tc.path + k); got != tc.want {
				t.Errorf("after %s: %d charged, want %d", tc.path, got, tc.want)
				ok = false
			}
		}
		// A client that hangs up before the trailer: the fallback, charged
		// once Caddy's handler has returned.
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/hangs", nil)
		req.Header.Set("X-API-Key", "hangs"+k)
		res, err := tester.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = res.Body.Read(make([]byte, 8))
		cancel()
		res.Body.Close()
		<-hung
		got := charged("hangs" + k)
		for deadline := time.Now().Add(5 * time.Second); got != 7 && time.Now().Before(deadline); got = charged("hangs" + k) {
			time.Sleep(10 * time.Millisecond)
		}
		if got != 7 {
			t.Errorf("client gone before the trailer: %d charged, want 7 (the fallback)", got)
			ok = false
		}
		return ok
	})
}

// TestCostAfterConcurrentBound: 20 clients over three handler instances
// on one Redis send requests of random real costs (0 to 200, pre-charged
// 1) against events 1000 per window until refused: what was charged never
// passes the documented bound, events + in-flight × (largest real cost −
// cost), and the store holds exactly what the upstream reported.
func TestCostAfterConcurrentBound(t *testing.T) {
	const clients, maxCost, events = 20, 200, 1000
	cfg := sharedRedis(t)
	c, _ := testenv.Redis(t)
	var servers []*httptest.Server
	backend := &usageBackend{cost: func(int64) string {
		time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond) // in flight a while
		return strconv.Itoa(rand.IntN(maxCost + 1))
	}}
	for range 3 {
		h := costAfterHandler(cfg, tokenZone(limiter.FixedWindow, events, time.Hour))
		provision(t, h)
		servers = append(servers, serve(t, h, backend))
	}
	inOneWindow(t, c, time.Hour, func(attempt int) bool {
		key := "bound-" + strconv.Itoa(attempt)
		backend.total.Store(0)
		var served atomic.Int64
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() {
				for {
					status, _ := send(t, context.Background(), servers[i%len(servers)], key)
					if status != http.StatusOK {
						return
					}
					served.Add(1)
				}
			})
		}
		wg.Wait()
		total := backend.total.Load()
		bound := int64(events + clients*(maxCost-1))
		t.Logf("%d requests served, %d units charged (bound %d)", served.Load(), total, bound)
		ok := true
		if total > bound {
			t.Errorf("charged %d, past the bound %d", total, bound)
			ok = false
		}
		v, err := c.Get(context.Background(), limiter.StoreKey(cfg.KeyPrefix, "tokens", "", key)).Result()
		if f := strings.Fields(v); err != nil || len(f) != 3 || f[2] != strconv.FormatInt(total, 10) {
			t.Errorf("store holds %q (%v), want the window's count %d", v, err, total)
			ok = false
		}
		return ok
	})
}
