//go:build soak

package edgekit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestSoak (make soak; build tag soak) sends SOAK_DURATION (default 30m)
// of mixed traffic — rate-limited requests, redirects, creates — to both
// modules in a real Caddy, with a throwaway Redis (append-only, restarted
// gracefully) and PostgreSQL restarted in turn every SOAK_RESTART_EVERY
// (default 3m). With the traffic stopped, the heap in use (after a GC),
// the goroutines and the open file descriptors must be back within
// SOAK_TOLERANCE percent (default 10) of their level after the warm-up,
// and every link's click total must equal the redirects the clients saw.
func TestSoak(t *testing.T) {
	duration := envDuration(t, "SOAK_DURATION", 30*time.Minute)
	restartEvery := min(envDuration(t, "SOAK_RESTART_EVERY", 3*time.Minute), duration/3)
	warmup := envDuration(t, "SOAK_WARMUP", 20*time.Second)
	tolerance := envInt(t, "SOAK_TOLERANCE", 10)
	clients := envInt(t, "SOAK_CLIENTS", 6)

	rs := testenv.StartRedisAOF(t)
	pg := testenv.StartPostgres(t)
	s := startSoakCaddy(t, rs.URL(), pg.DSN())
	for i := range 20 {
		s.codes = append(s.codes, s.create(t, fmt.Sprintf("https://example.com/soak/%d", i)))
	}

	t.Logf("warm-up %s", warmup)
	s.load(clients, warmup, nil)
	base := measureProcess(s.client)
	t.Logf("baseline: %s", base)

	t.Logf("soak %s, restarting Redis or PostgreSQL every %s", duration, restartEvery)
	turn := 0
	s.load(clients, duration, func() {
		if turn%2 == 0 {
			t.Log("restarting Redis")
			rs.Shutdown()
			time.Sleep(time.Second)
			rs.Start()
		} else {
			t.Log("restarting PostgreSQL")
			pg.Stop()
			pg.Start()
		}
		turn++
	}, restartEvery)
	t.Logf("requests by status: %v", s.statuses())

	s.checkClicks(t)
	end := measureProcess(s.client)
	t.Logf("end: %s", end)
	within(t, "heap in use", base.heap, end.heap, tolerance)
	within(t, "goroutines", base.goroutines, end.goroutines, tolerance)
	within(t, "open fds", base.fds, end.fds, tolerance)
}

// soakCaddy is the Caddy under soak and what its clients saw.
type soakCaddy struct {
	base, apiKey string
	client       *http.Client
	codes        []string

	mu        sync.Mutex
	redirects map[string]int64 // 302s seen per code
	status    map[int]int64
}

func startSoakCaddy(t *testing.T, redisURL, dsn string) *soakCaddy {
	admin, port := testenv.FreePort(t), testenv.FreePort(t)
	s := &soakCaddy{
		base:      fmt.Sprintf("http://127.0.0.1:%d", port),
		apiKey:    "soak-" + testenv.RandomID(12),
		redirects: map[string]int64{},
		status:    map[int]int64{},
		client: &http.Client{
			Timeout:       10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
		},
	}
	config := fmt.Sprintf(`{
	admin 127.0.0.1:%[1]d
	http_port %[2]d
	https_port %[3]d
	auto_https off
	skip_install_trust
}

http://127.0.0.1:%[2]d {
	route /rl/* {
		ratelimit {
			zone per_client {
				key {http.request.header.X-Client}
				events 50
				window 1s
			}
			redis %[4]s
			timeout 50ms
			on_error local
		}
		respond "ok"
	}
	route {
		shortener {
			store postgres "%[5]s"
			redis %[4]s
			api /api
			api_key %[6]s
		}
		respond "home"
	}
}
`, admin, port, testenv.FreePort(t), redisURL, dsn, s.apiKey)
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
		AdminPort:          admin,
		LoadRequestTimeout: 30 * time.Second,
		TestRequestTimeout: 10 * time.Second,
	})
	tester.InitServer(config, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return s
}

func (s *soakCaddy) create(t *testing.T, long string) string {
	req, _ := http.NewRequest("POST", s.base+"/api/links", strings.NewReader(`{"long_url":"`+long+`"}`))
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ Code string }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %v", res.StatusCode, err)
	}
	return out.Code
}

// load runs n clients for d; every `every` (if given) it calls between.
// Each client sends, of every 10 requests, 1 create, 3 rate-limited
// requests and 6 redirects.
func (s *soakCaddy) load(n int, d time.Duration, between func(), every ...time.Duration) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for id := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s.send(id, i)
			}
		}()
	}
	end := time.Now().Add(d)
	for between != nil && len(every) > 0 && time.Until(end) > every[0]+5*time.Second {
		time.Sleep(every[0])
		between()
	}
	time.Sleep(time.Until(end))
	close(stop)
	wg.Wait()
	s.client.CloseIdleConnections()
	time.Sleep(3 * time.Second) // the click pipeline and pools settle
}

// send sends a client's i-th request and records what it saw.
func (s *soakCaddy) send(id, i int) {
	var req *http.Request
	code := ""
	switch i % 10 {
	case 0:
		req, _ = http.NewRequest("POST", s.base+"/api/links", strings.NewReader(fmt.Sprintf(`{"long_url":"https://example.com/c%d/%d"}`, id, i)))
		req.Header.Set("Authorization", "Bearer "+s.apiKey)
	case 1, 2, 3:
		req, _ = http.NewRequest("GET", s.base+"/rl/x", nil)
		req.Header.Set("X-Client", fmt.Sprint("c", id))
	default:
		code = s.codes[(i*7+id)%len(s.codes)]
		req, _ = http.NewRequest("GET", s.base+"/"+code, nil)
	}
	res, err := s.client.Do(req)
	status := 0
	if err == nil {
		status = res.StatusCode
		res.Body.Close()
	}
	s.mu.Lock()
	s.status[status]++
	if code != "" && status == http.StatusFound {
		s.redirects[code]++
	}
	s.mu.Unlock()
}

func (s *soakCaddy) statuses() map[int]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]int64, len(s.status))
	for k, v := range s.status {
		out[k] = v
	}
	return out
}

// checkClicks waits up to 30s for every link's click total to equal the
// redirects its clients saw.
func (s *soakCaddy) checkClicks(t *testing.T) {
	var total int64
	for _, code := range s.codes {
		want := s.redirects[code]
		total += want
		got := int64(-1)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			if got = s.clicks(code); got == want {
				break
			}
		}
		if got != want {
			t.Errorf("link %s: clicks %d, want %d redirects", code, got, want)
		}
	}
	t.Logf("clicks: %d redirects counted across %d links", total, len(s.codes))
}

func (s *soakCaddy) clicks(code string) int64 {
	req, _ := http.NewRequest("GET", s.base+"/api/links/"+code, nil)
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	res, err := s.client.Do(req)
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	var out struct{ Clicks *int64 }
	if json.NewDecoder(res.Body).Decode(&out) != nil || out.Clicks == nil {
		return -1
	}
	return *out.Clicks
}

// processLevel is what must not grow over the soak.
type processLevel struct{ heap, goroutines, fds int64 }

func (l processLevel) String() string {
	return fmt.Sprintf("heap in use %d B, goroutines %d, fds %d", l.heap, l.goroutines, l.fds)
}

// measureProcess reads this process' level (Caddy runs in it) after a GC,
// with the test's client connections closed.
func measureProcess(c *http.Client) processLevel {
	c.CloseIdleConnections()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fds, _ := os.ReadDir("/proc/self/fd")
	return processLevel{heap: int64(m.HeapInuse), goroutines: int64(runtime.NumGoroutine()), fds: int64(len(fds))}
}

func within(t *testing.T, what string, start, end int64, tolerance int) {
	lo, hi := start*int64(100-tolerance)/100, start*int64(100+tolerance)/100
	if end < lo || end > hi {
		t.Errorf("%s: %d, start %d (allowed %d..%d)", what, end, start, lo, hi)
	} else {
		t.Logf("ok %s: %d, start %d (allowed %d..%d)", what, end, start, lo, hi)
	}
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a duration such as 2m", name, v)
	}
	return d
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}
