package ratelimit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile" // the caddyfile adapter

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// reloadSite is a running Caddy (in this process) on a free port whose
// config a test loads and reloads through caddy.Load, as `caddy reload`
// does (forced, so that an unchanged config is reloaded too).
type reloadSite struct {
	t      *testing.T
	port   int
	https  int
	client *http.Client
}

func newReloadSite(t *testing.T) *reloadSite {
	t.Helper()
	s := &reloadSite{t: t, port: testenv.FreePort(t), https: testenv.FreePort(t),
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	t.Cleanup(func() {
		if err := caddy.Stop(); err != nil {
			t.Errorf("stopping Caddy: %v", err)
		}
		s.client.CloseIdleConnections()
	})
	return s
}

// load loads body, the sites of a Caddyfile, under global options that
// keep the test apart (no admin endpoint, nothing persisted).
func (s *reloadSite) load(body string) {
	s.t.Helper()
	if err := loadErr(s, body); err != nil {
		s.t.Fatal(err)
	}
}

// loadErr loads body as load does and returns the error.
func loadErr(s *reloadSite, body string) error {
	cf := fmt.Sprintf(`{
	admin off
	persist_config off
	http_port %d
	https_port %d
	auto_https off
	skip_install_trust
	log {
		output discard
	}
}

http://localhost:%d {
%s
}
`, s.port, s.https, s.port, body)
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil) // warnings: formatting only
	if err != nil {
		return fmt.Errorf("adapting the Caddyfile: %w\n%s", err, cf)
	}
	if err := caddy.Load(cfg, true); err != nil {
		return fmt.Errorf("loading the config: %w", err)
	}
	// A kept-alive connection still reaches the old config's server while
	// it drains (its grace period), which answers with the old handlers:
	// the next requests go on new connections.
	s.client.CloseIdleConnections()
	return nil
}

// get sends GET path with X-Key: key and returns the status (0: failed).
// A connection the old config's server closes as a reload completes fails
// before any response: such a request is sent again, a few times.
func (s *reloadSite) get(path, key string) int {
	for range 5 {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://localhost:%d%s", s.port, path), nil)
		if err != nil {
			s.t.Fatal(err)
		}
		req.Header.Set("X-Key", key)
		res, err := s.client.Do(req)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	return 0
}

// expect sends n requests and requires each status to be want.
func (s *reloadSite) expect(what, path, key string, n, want int) {
	s.t.Helper()
	for i := range n {
		if got := s.get(path, key); got != want {
			s.t.Fatalf("%s: request %d of %d to %s with key %s: status %d, want %d", what, i+1, n, path, key, got, want)
		}
	}
}

// limitedRoute is a route limiting X-Key to events per hour.
func limitedRoute(path string, events int, extra string) string {
	return fmt.Sprintf(`	route %s {
		ratelimit {
			zone per_key {
				key {http.request.header.X-Key}
				events %d
				window 1h
			}
			%s
		}
		respond "ok"
	}
`, path, events, extra)
}

// The finding: a key refused with 429 got a fresh quota after a reload of
// its unchanged zone. It stays refused across a forced reload of the same
// config and one with an unrelated change; another key keeps its own
// quota; a changed zone starts fresh (the documented rule).
func TestReloadKeepsRefusedKey(t *testing.T) {
	s := newReloadSite(t)
	s.load(limitedRoute("/a/*", 5, ""))
	s.expect("first config", "/a/x", "k1", 5, http.StatusOK)
	s.expect("first config", "/a/x", "k1", 1, http.StatusTooManyRequests)
	s.expect("first config", "/a/x", "k2", 2, http.StatusOK)

	s.load(limitedRoute("/a/*", 5, ""))
	s.expect("same config reloaded", "/a/x", "k1", 1, http.StatusTooManyRequests)

	s.load(limitedRoute("/a/*", 5, "") + "\trespond /other \"elsewhere\"\n")
	s.expect("unrelated change", "/a/x", "k1", 1, http.StatusTooManyRequests)
	s.expect("unrelated change", "/a/x", "k2", 3, http.StatusOK)
	s.expect("unrelated change", "/a/x", "k2", 1, http.StatusTooManyRequests)

	// A change elsewhere in the handler (a setting that does not shape the
	// zone's state) keeps it too.
	s.load(limitedRoute("/a/*", 5, "status 503"))
	s.expect("handler status changed", "/a/x", "k1", 1, http.StatusServiceUnavailable)

	// The zone changed: it starts fresh, with its new quota.
	s.load(limitedRoute("/a/*", 7, "status 503"))
	s.expect("zone changed", "/a/x", "k1", 7, http.StatusOK)
	s.expect("zone changed", "/a/x", "k1", 1, http.StatusServiceUnavailable)
}

// In a handler whose other zone changed, the unchanged zone keeps its
// state; a config that fails to load leaves the running one's state alone.
func TestReloadKeepsUnchangedZoneOfChangedHandler(t *testing.T) {
	s := newReloadSite(t)
	other := func(events int) string {
		return fmt.Sprintf("zone by_path {\n\t\t\t\tkey {http.request.uri.path}\n\t\t\t\tevents %d\n\t\t\t\twindow 1h\n\t\t\t}", events)
	}
	s.load(limitedRoute("/a/*", 3, other(1000)))
	s.expect("first config", "/a/x", "k", 3, http.StatusOK)
	s.expect("first config", "/a/x", "k", 1, http.StatusTooManyRequests)
	s.load(limitedRoute("/a/*", 3, other(2000)))
	s.expect("other zone changed", "/a/y", "k", 1, http.StatusTooManyRequests)

	states, loads := carriedSize()
	bad := limitedRoute("/a/*", 3, other(2000)) + limitedRoute("/b/*", 3, "redis \"redis://[::1\"")
	err := loadErr(s, bad)
	if err == nil || !strings.Contains(err.Error(), "loading the config") {
		t.Fatalf("a config with an invalid Redis URL: %v, want a failure at provisioning", err)
	}
	if gotStates, gotLoads := carriedSize(); gotStates != states || gotLoads != loads {
		t.Errorf("after a failed load: %d zone states in %d loads, want %d in %d", gotStates, gotLoads, states, loads)
	}
	s.expect("after a failed load", "/a/y", "k", 1, http.StatusTooManyRequests)
}

// Two blocks with identical zones never share state, and each keeps its
// own across reloads, also when a block is added before them.
func TestReloadIdenticalBlocksApart(t *testing.T) {
	s := newReloadSite(t)
	two := limitedRoute("/a/*", 5, "") + limitedRoute("/b/*", 5, "")
	s.load(two)
	s.expect("block a", "/a/x", "k", 5, http.StatusOK)
	s.expect("block a", "/a/x", "k", 1, http.StatusTooManyRequests)
	s.expect("block b", "/b/x", "k", 2, http.StatusOK)

	s.load(two)
	s.expect("reloaded, block a", "/a/x", "k", 1, http.StatusTooManyRequests)
	s.expect("reloaded, block b", "/b/x", "k", 3, http.StatusOK)
	s.expect("reloaded, block b", "/b/x", "k", 1, http.StatusTooManyRequests)

	// Another limiter (another zone definition) before them.
	s.load(limitedRoute("/c/*", 9, "") + two)
	s.expect("block c added, block a", "/a/x", "k", 1, http.StatusTooManyRequests)
	s.expect("block c added, block b", "/b/x", "k", 1, http.StatusTooManyRequests)
	s.expect("block c added, block c", "/c/x", "k", 9, http.StatusOK)
}

// The local fallback's counts are carried too: with Redis unreachable and
// on_error local, a key refused by the fallback stays refused.
func TestReloadKeepsLocalFallback(t *testing.T) {
	s := newReloadSite(t)
	dead := fmt.Sprintf("redis://127.0.0.1:%d/0", testenv.FreePort(t)) // nothing listens
	cfg := limitedRoute("/a/*", 3, "redis "+dead+"\n\t\t\ton_error local\n\t\t\ttimeout 200ms")
	s.load(cfg)
	s.expect("fallback", "/a/x", "k", 3, http.StatusOK)
	s.expect("fallback", "/a/x", "k", 1, http.StatusTooManyRequests)
	s.load(cfg)
	s.expect("fallback, reloaded", "/a/x", "k", 1, http.StatusTooManyRequests)
}

// Reloading under load never lets more than the quota of an unchanged zone
// through, and leaves no zone state behind: the process holds as many
// after 12 reloads as after the first load, and none of the test's once
// Caddy stops.
func TestReloadUnderLoad(t *testing.T) {
	before, _ := carriedSize()
	s := newReloadSite(t)
	const quota = 40
	// Two zones: a decision locks both zones' stores, shared by the old
	// and the new handler while a reload drains.
	global := "zone global {\n\t\t\t\tkey all\n\t\t\t\tevents 1000000\n\t\t\t\twindow 1h\n\t\t\t}"
	configs := []string{
		limitedRoute("/a/*", quota, global),
		limitedRoute("/a/*", quota, global) + "\trespond /other \"elsewhere\"\n",
	}
	s.load(configs[0])
	states, loads := carriedSize()

	var stop atomic.Bool
	var passed, refused, failed, other atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				switch s.get("/a/x", "hot") {
				case http.StatusOK:
					passed.Add(1)
				case http.StatusTooManyRequests:
					refused.Add(1)
				case 0:
					failed.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	for i := range 12 {
		for passed.Load()+refused.Load() < int64(10*(i+1)) {
			time.Sleep(time.Millisecond)
		}
		s.load(configs[i%2])
	}
	for n := refused.Load(); refused.Load() < n+20; {
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d passed, %d refused, %d failed, %d other across 12 reloads", passed.Load(), refused.Load(), failed.Load(), other.Load())
	if passed.Load() > quota {
		t.Errorf("%d requests passed across reloads, want at most the quota %d", passed.Load(), quota)
	}
	if s.get("/a/x", "hot") != http.StatusTooManyRequests {
		t.Error("the key is not refused after the reloads")
	}

	// No leak.
	if gotStates, gotLoads := carriedSize(); gotStates != states || gotLoads != loads {
		t.Errorf("after 12 reloads: %d zone states in %d loads, want %d in %d as after the first load",
			gotStates, gotLoads, states, loads)
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	if gotStates, _ := carriedSize(); gotStates > before {
		t.Errorf("Caddy stopped: %d zone states held, want at most %d as before the test", gotStates, before)
	}
}

// An approximate zone's units taken in process are neither lost nor sent
// twice across reloads: the table is carried, and only the last handler
// sends what is left. Its deny cache is carried as well.
func TestReloadApproximateUnitsOnce(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	url := testenv.RedisURL(t)
	s := newReloadSite(t)
	redisCfg := fmt.Sprintf("redis {\n\t\t\t\turl %s\n\t\t\t\tkey_prefix %s\n\t\t\t}\n\t\t\ttimeout 2s", url, prefix)
	route := func(approx string) string {
		return fmt.Sprintf(`	route /a/* {
		ratelimit {
			zone per_key {
				key {http.request.header.X-Key}
				events 100
				window 1h
				%s
			}
			%s
		}
		respond "ok"
	}
`, approx, redisCfg)
	}
	cfg := route("approximate 1h") // no periodic sync within the test
	s.load(cfg)
	s.expect("approximate", "/a/x", "k", 10, http.StatusOK)
	for i := range 3 {
		s.load(cfg + fmt.Sprintf("\trespond /other%d \"elsewhere\"\n", i))
		s.expect("approximate, reloaded", "/a/x", "k", 10, http.StatusOK)
	}
	if err := caddy.Stop(); err != nil { // the last handler sends its units
		t.Fatal(err)
	}
	store := limiter.NewRedisStore(rdb)
	res, err := store.Decide(context.Background(), []limiter.Ask{{
		Key:   limiter.StoreKey(prefix, "per_key", "", "k"),
		Limit: limiter.Limit{Algorithm: limiter.TokenBucket, Events: 100, Window: time.Hour},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// 40 units taken; the refill over the test's seconds adds less than 1.
	if res[0].Remaining != 60 {
		t.Errorf("Redis has %d left after 40 requests across 3 reloads, want 60 (none lost, none sent twice)", res[0].Remaining)
	}

	// The deny cache: a refusal learned before a reload answers after it.
	s.load(route(""))
	for s.get("/a/x", "d") == http.StatusOK {
	}
	s.load(route("") + "\trespond /other \"elsewhere\"\n")
	var hs []*Handler
	for _, e := range loadedHandlers() {
		hs = append(hs, e.h)
	}
	if len(hs) != 1 || hs[0].deny == nil {
		t.Fatalf("%d handlers loaded, want 1 with a deny cache", len(hs))
	}
	if _, ok := hs[0].deny.tables[hs[0].Zones[0]].entries.GetIfPresent(limiter.StoreKey(prefix, "per_key", "", "d")); !ok {
		t.Error("the refusal learned before the reload is not in the new handler's deny cache")
	}
}
