package edgekit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestChaosReloadUnderLoad loads a Caddyfile with both modules into a real
// Caddy, sends rate-limited requests and redirects from 40 clients, and
// reloads the config three times with a changed zone while they flow: no
// request fails, the Redis and PostgreSQL connections of the old config
// are reused by the new one (the same server-side connection IDs stay),
// and every counted redirect ends up in the click totals.
func TestChaosReloadUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a long reload scenario: skipped under -short")
	}
	rs := testenv.StartRedis(t)
	dsn := testenv.Postgres(t)
	admin, port := testenv.FreePort(t), testenv.FreePort(t)
	const apiKey = "reload-test-key-0123456789"
	config := func(events int, window string) string {
		return fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[3]d
	auto_https off
	skip_install_trust
}

http://localhost:%[2]d {
	route /rl/* {
		ratelimit {
			zone per_ip {
				key {client_ip}
				events %[6]d
				window %[7]s
			}
			redis %[4]s
			timeout 2s
			on_error closed
		}
		respond "ok"
	}
	route {
		shortener {
			store postgres "%[5]s"
			redis %[4]s
			api /api
			api_key %[8]s
		}
		respond "home"
	}
}
`, admin, port, testenv.FreePort(t), rs.URL(), dsn, events, window, apiKey)
	}
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
		AdminPort:          admin,
		LoadRequestTimeout: 30 * time.Second,
		TestRequestTimeout: 10 * time.Second,
	})
	tester.InitServer(config(1_000_000, "1m"), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	base := fmt.Sprintf("http://localhost:%d", port)
	client := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
	}

	var codes []string
	for i := range 5 {
		req, _ := http.NewRequest("POST", base+"/api/links", strings.NewReader(fmt.Sprintf(`{"long_url":"https://example.com/reload/%d"}`, i)))
		req.Header.Set("Authorization", "Bearer "+apiKey)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Code string }
		err = json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if res.StatusCode != http.StatusCreated || err != nil {
			t.Fatalf("create: %d %v", res.StatusCode, err)
		}
		codes = append(codes, out.Code)
	}

	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	redisIDs := func() map[string]bool {
		list, err := rdb.ClientList(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
			if !strings.Contains(line, "cmd=client|list") && !strings.Contains(line, "cmd=subscribe") {
				ids[id] = true
			}
		}
		return ids
	}
	pgPIDs := func() map[int]bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = 'caddy-shortener'`)
		if err != nil {
			t.Fatal(err)
		}
		pids := map[int]bool{}
		for rows.Next() {
			var pid int
			if err := rows.Scan(&pid); err != nil {
				t.Fatal(err)
			}
			pids[pid] = true
		}
		return pids
	}

	var (
		stop      atomic.Bool
		wg        sync.WaitGroup
		mu        sync.Mutex
		failures  []string
		redirects = map[string]int64{}
		total     atomic.Int64
	)
	for c := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				path, want := "/rl/item", http.StatusOK
				if c%2 == 1 {
					path, want = "/"+codes[(c+n)%len(codes)], http.StatusFound
				}
				res, err := client.Get(base + path)
				total.Add(1)
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("GET %s: %v", path, err))
					mu.Unlock()
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				mu.Lock()
				if res.StatusCode != want {
					failures = append(failures, fmt.Sprintf("GET %s: %d, want %d", path, res.StatusCode, want))
				} else if want == http.StatusFound {
					redirects[path[1:]]++
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}

	time.Sleep(time.Second)
	redisBefore, pgBefore := redisIDs(), pgPIDs()
	for i, cfg := range []string{config(2_000_000, "2m"), config(3_000_000, "1m"), config(1_000_000, "30s")} {
		tester.InitServer(cfg, "caddyfile")
		if t.Failed() {
			stop.Store(true)
			wg.Wait()
			t.FailNow()
		}
		t.Logf("reload %d done", i+1)
		time.Sleep(700 * time.Millisecond)
	}
	redisAfter, pgAfter := redisIDs(), pgPIDs()
	stop.Store(true)
	wg.Wait()

	for _, f := range failures[:min(len(failures), 10)] {
		t.Errorf("during reloads: %s", f)
	}
	kept := 0
	for id := range redisBefore {
		if redisAfter[id] {
			kept++
		}
	}
	if kept == 0 {
		t.Errorf("no Redis connection survived the reloads (%d before, %d after): the client pool was not reused", len(redisBefore), len(redisAfter))
	}
	keptPG := 0
	for pid := range pgBefore {
		if pgAfter[pid] {
			keptPG++
		}
	}
	if keptPG == 0 {
		t.Errorf("no PostgreSQL connection survived the reloads (%v before, %v after): the pool was not reused", pgBefore, pgAfter)
	}
	t.Logf("%d requests, %d failures; Redis connections kept %d of %d, PostgreSQL %d of %d",
		total.Load(), len(failures), kept, len(redisBefore), keptPG, len(pgBefore))

	// Clicks: every 302 is counted once, across the reloads.
	deadline := time.Now().Add(20 * time.Second)
	for _, code := range codes {
		want := redirects[code]
		for {
			req, _ := http.NewRequest("GET", base+"/api/links/"+code, nil)
			req.Header.Set("Authorization", "Bearer "+apiKey)
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var out struct{ Clicks *int64 }
			_ = json.NewDecoder(res.Body).Decode(&out)
			res.Body.Close()
			if out.Clicks != nil && *out.Clicks == want {
				break
			}
			if time.Now().After(deadline) {
				got := "absent"
				if out.Clicks != nil {
					got = fmt.Sprint(*out.Clicks)
				}
				t.Errorf("link %s: clicks %s, want %d redirects; %s", code, got, want, clickMetrics(client, admin))
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// clickMetrics returns the click pipeline's counters from the admin
// endpoint's metrics, to tell a click dropped (and why) from one lost.
func clickMetrics(client *http.Client, admin int) string {
	res, err := client.Get(fmt.Sprintf("http://localhost:%d/metrics", admin))
	if err != nil {
		return "metrics: " + err.Error()
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "caddy_shortener_clicks_") {
			lines = append(lines, l)
		}
	}
	return "metrics: " + strings.Join(lines, "; ")
}
