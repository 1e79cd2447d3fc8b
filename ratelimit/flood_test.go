//go:build flood

package ratelimit

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestFloodAcceptance is issue 13's flood: three instances with default
// settings (timeout 10ms, on_error open) sharing the test Redis, one key
// of quota 100 per minute, 600 concurrent requests, twenty runs in a row
// with a fresh key each. At most 102 pass in every run: load never fails
// the limiter open. Its own step in scripts/test.sh, without -race and not
// beside other packages: it measures this machine, not the race detector.
func TestFloodAcceptance(t *testing.T) {
	redisCfg := sharedRedis(t)
	hs := make([]*Handler, 3)
	for i := range hs {
		hs[i] = &Handler{Zones: []*Zone{zone("flood", 100, time.Minute)}, Redis: redisCfg}
		provision(t, hs[i])
	}
	next := new(statusHandler)
	// A running Caddy: each instance has decided before, concurrently, so
	// its connections are up and the script is cached (recovery from a
	// cold pool is TestChaosRecoveryRedisRestart's).
	warm := concurrently(t, 60, func(i int) int {
		return do(hs[i%len(hs)], next, get("/", "X-API-Key", "warm-"+testenv.RandomID(6))).status
	})
	for i, h := range hs {
		if s := h.breaker.state(); s != "closed" {
			t.Fatalf("instance %d: breaker %s after the warm-up (%v)", i+1, s, warm)
		}
	}
	const runs, requests, most = 20, 600, 102
	var allowed []int
	for run := range runs {
		key := fmt.Sprintf("flood-%d-%s", run, testenv.RandomID(6))
		counts := concurrently(t, requests, func(i int) int {
			return do(hs[i%len(hs)], next, get("/", "X-API-Key", key)).status
		})
		allowed = append(allowed, counts[http.StatusOK])
		if counts[http.StatusOK] > most {
			t.Errorf("run %d: %d of %d requests passed, want at most %d (statuses %v)", run+1, counts[http.StatusOK], requests, most, counts)
		}
		t.Logf("run %d: %v; outcomes so far: allowed %v refused %v fail_open %v overloaded %v", run+1, counts,
			decisions("flood", "allowed"), decisions("flood", "refused"), decisions("flood", "fail_open"), decisions("flood", "overloaded"))
	}
	fmt.Printf("flood acceptance: allowed per run %v\n", allowed)
}
