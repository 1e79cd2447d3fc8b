package ratelimit

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// Recovery after a store outage, under a crowd: three instances with one
// fail-closed zone of quota 100, default settings otherwise, take load
// while their store fails; the load stops, the store answers again, and
// 1,000 concurrent requests for one fresh key arrive across the three at
// once (a zone of 100 an hour: nothing refills meanwhile). Exactly 100 pass and 900 are refused (429): none is failed closed
// (503) because the instances' pools are cold or their breakers still
// open. The time from the store answering to the first and last decision
// is logged.
//
// The timeout is 100ms, not the default 10ms: under -race a thousand
// goroutines on two shared cores may read a batch's reply later than 2×
// 10ms, a store failure by definition (TestFloodAcceptance measures the
// default without -race). These tests are about recovery.
const (
	recoveryQuota   = 100
	recoveryCrowd   = 1000
	recoveryTimeout = 100 * time.Millisecond
	recoveryWithin  = time.Second
)

// recoveryHandlers are three instances on cfgs (one each: distinct
// configs get distinct clients from redispool, like three Caddy processes
// with their own connections) sharing one key prefix.
func recoveryHandlers(t *testing.T, cfgs []redispool.Config, hashTag string) []*Handler {
	t.Helper()
	prefix := "edgekit-test-" + testenv.RandomID(6)
	// Run last: a failed crowd's verdict ends the output, after the logs.
	t.Cleanup(func() {
		if v, ok := crowdFailures.LoadAndDelete(t); ok {
			for _, msg := range *v.(*[]string) {
				t.Logf("FAILED: %s", msg)
			}
		}
	})
	hs := make([]*Handler, len(cfgs))
	for i := range cfgs {
		c := cfgs[i]
		c.KeyPrefix = prefix
		hs[i] = &Handler{Zones: []*Zone{zone("recover", recoveryQuota, time.Hour)}, Redis: &c,
			OnError: "closed", HashTag: hashTag, Timeout: caddy.Duration(recoveryTimeout)}
		logs := provision(t, hs[i])
		t.Cleanup(func() {
			for _, e := range logs.All() {
				if strings.HasPrefix(e.Message, "rate limit store") {
					t.Logf("instance %d: %s %s %v", i+1, e.Time.Format("15:04:05.000"), e.Message, e.ContextMap())
				}
			}
		})
	}
	for i := 1; i < len(hs); i++ {
		if hs[i].client.UniversalClient == hs[0].client.UniversalClient {
			t.Fatalf("instances 1 and %d share a Redis client; want one each", i+1)
		}
	}
	return hs
}

// recoveryLoad sends requests for fresh keys to hs from clients goroutines
// until stopped (any of 200, 429 and 503 is fine: the store fails).
func recoveryLoad(t *testing.T, hs []*Handler, clients int, header ...string) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[int]int{}
	next := new(statusHandler)
	for c := range clients {
		wg.Go(func() {
			for n := 0; !done.Load(); n++ {
				key := "load-" + strconv.Itoa(c) + "-" + strconv.Itoa(n)
				res := do(hs[c%len(hs)], next, get("/", append([]string{"X-API-Key", key}, header...)...))
				mu.Lock()
				counts[res.status]++
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	return func() {
		done.Store(true)
		wg.Wait()
		t.Logf("load: %v", counts)
	}
}

// recoveryCrowdAfter fires the crowd for one fresh key across hs at once
// and checks its answers; answered is when the store answered again.
func recoveryCrowdAfter(t *testing.T, hs []*Handler, what string, answered time.Time, header ...string) {
	t.Helper()
	key := "crowd-" + testenv.RandomID(6)
	next := new(statusHandler)
	var first atomic.Int64 // Unix nanoseconds of the first decision (200 or 429)
	var last atomic.Int64
	counts := concurrently(t, recoveryCrowd, func(i int) int {
		res := do(hs[i%len(hs)], next, get("/", append([]string{"X-API-Key", key}, header...)...))
		if res.status == http.StatusOK || res.status == http.StatusTooManyRequests {
			now := time.Now().UnixNano()
			first.CompareAndSwap(0, now)
			for l := last.Load(); now > l && !last.CompareAndSwap(l, now); l = last.Load() {
			}
		}
		return res.status
	})
	since := func(ns int64) string {
		if ns == 0 {
			return "never"
		}
		return time.Unix(0, ns).Sub(answered).Round(time.Millisecond).String()
	}
	t.Logf("%s: %v; first decision %s, last %s after the store answered; breakers %s; outcomes so far: fail_closed %v overloaded %v",
		what, counts, since(first.Load()), since(last.Load()), breakerStates(hs),
		decisions("recover", "fail_closed"), decisions("recover", "overloaded"))
	if counts[http.StatusOK] != recoveryQuota || counts[http.StatusTooManyRequests] != recoveryCrowd-recoveryQuota {
		crowdFailed(t, "%s (store answered at %s): %d requests answered %v, want exactly %d 200 and %d 429 (no 503)",
			what, answered.Format("15:04:05.000"), recoveryCrowd, counts, recoveryQuota, recoveryCrowd-recoveryQuota)
	}
	// Recovered within recoveryWithin of the store answering: the
	// crowd's first decision (its last one also measures how fast a
	// thousand goroutines run under -race on shared cores: logged only).
	if f := first.Load(); f == 0 || time.Unix(0, f).Sub(answered) > recoveryWithin {
		crowdFailed(t, "%s (store answered at %s): first decision %s after the store answered, want within %v",
			what, answered.Format("15:04:05.000"), since(f), recoveryWithin)
	}
}

// crowdFailures holds each test's failed crowd checks, repeated at the end
// of its output (see recoveryHandlers).
var crowdFailures sync.Map // *testing.T → *[]string

// crowdFailed fails t and keeps the message for the end of its output.
func crowdFailed(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	t.Error(msg)
	v, _ := crowdFailures.LoadOrStore(t, new([]string))
	*v.(*[]string) = append(*v.(*[]string), msg)
}

func breakerStates(hs []*Handler) string {
	s := ""
	for i, h := range hs {
		if i > 0 {
			s += ","
		}
		s += h.breaker.state()
	}
	return s
}

// TestChaosRecoveryRedisRestart: Redis killed under load and restarted on
// the same port; the crowd arrives as soon as it answers PING.
func TestChaosRecoveryRedisRestart(t *testing.T) {
	srv := testenv.StartRedis(t)
	addr := srv.Addr()
	hs := recoveryHandlers(t, []redispool.Config{
		{URL: "redis://" + addr}, {URL: "redis://" + addr + "/0"}, {Addresses: []string{addr}},
	}, "")
	stop := recoveryLoad(t, hs, 30)
	time.Sleep(300 * time.Millisecond)
	srv.Stop()
	time.Sleep(1500 * time.Millisecond) // the breakers open, their probes fail
	stop()
	srv.Start() // returns once it answers PING
	recoveryCrowdAfter(t, hs, "redis restarted", time.Now())
}
