package shortener

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// TestChaosSentinelFailover: two instances share PostgreSQL and a Redis
// watched by three sentinels. Across SENTINEL FAILOVER and a killed
// primary, without a restart, creates are written through to the new
// primary and served by the other instance (at once by invalidation, at
// worst after its code filter's delta sync when a failover swallowed the
// message), and a revocation on one instance reaches the other (within 1s
// by invalidation, at worst after the L1 TTL).
func TestChaosSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("a long failover scenario: skipped under -short")
	}
	s := testenv.StartSentinel(t)
	dsn := testenv.Postgres(t)
	prefix := "edgekit-test-" + testenv.RandomID(6)
	node := func() *Handler {
		return newHandler(t, nil, func(h *Handler) {
			h.Store = "postgres"
			h.DSN = dsn
			h.Redis = &redispool.Config{Addresses: s.Addrs(), MasterName: s.MasterName, KeyPrefix: prefix}
		})
	}
	a, b := node(), node()
	primary := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName, SentinelAddrs: s.Addrs()})
	defer primary.Close()

	check := func(stage string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		var out link.Response
		for {
			w := serve(t, a, "POST", "/api/links", `{"long_url":"https://example.com/`+stage+`"}`, auth()...)
			if w.Code == http.StatusCreated {
				if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
					t.Fatal(err)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: create %d %s", stage, w.Code, w.Body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Written through to the current primary.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := primary.Get(ctx, prefix+":l:"+out.Code).Result()
		cancel()
		if err != nil || v == "" {
			t.Errorf("%s: link %s not in Redis on the primary: %q %v", stage, out.Code, v, err)
		}
		// Served by the other instance at once when the invalidation
		// reaches it; when a failover swallowed it, b's code filter learns
		// the code at its next delta sync (code_filter_sync), as documented.
		created := time.Now()
		eventually(t, DefaultCodeFilterSync+5*time.Second, stage+": the other instance answers 302", func() bool {
			return serve(t, b, "GET", "/"+out.Code, "").Code == http.StatusFound
		})
		if took := time.Since(created); took > 100*time.Millisecond {
			t.Logf("%s: invalidation missed, 302 after %v (code filter delta sync)", stage, took.Round(time.Millisecond))
		}
		// Revoke on a; b hears it within 1s.
		deadline = time.Now().Add(10 * time.Second)
		for {
			w := serve(t, a, "DELETE", "/api/links/"+out.Code, "", auth()...)
			if w.Code == http.StatusNoContent {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: DELETE %d %s", stage, w.Code, w.Body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Within 1s through the invalidation channel. Right after a
		// failover the subscription may still sit on the old primary (go-redis
		// does not move it) while the PUBLISH goes to the new one; the old
		// primary relays it only once demoted to a replica. The L1 TTL then
		// bounds the staleness, as documented.
		revoked := time.Now()
		eventually(t, DefaultLocalTTL+time.Second, stage+": the other instance answers 410", func() bool {
			return serve(t, b, "GET", "/"+out.Code, "").Code == http.StatusGone
		})
		if took := time.Since(revoked); took > time.Second {
			t.Logf("%s: invalidation missed, 410 after %v (L1 TTL)", stage, took.Round(time.Millisecond))
		}
	}

	check("before")
	old := s.Primary()
	s.Failover()
	followFailover(t, old, a, b)
	check("after-sentinel-failover")
	killed, _ := s.KillPrimary()
	check("after-primary-killed")
	s.RestartNode(killed)
	check("old-primary-back")
}

// followFailover waits until the primary at old is demoted to a replica and
// every handler's client talks to a primary. Sentinel names the new primary
// before it reconfigures the old one, so for a moment both are masters: a
// create then may be written through to the old one, which accepts it
// (no READONLY error, nothing to retry) and loses it when it resyncs as a
// replica; the link stays in the store, served from there. That window is
// Redis's, not the handler's: the check after a failover starts once it
// has closed.
func followFailover(t *testing.T, old string, hs ...*Handler) {
	t.Helper()
	role := func(c redis.UniversalClient) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := c.Do(ctx, "ROLE").Slice()
		if err != nil || len(r) == 0 {
			return ""
		}
		s, _ := r[0].(string)
		return s
	}
	oc := redis.NewClient(&redis.Options{Addr: old})
	defer oc.Close()
	eventually(t, 30*time.Second, "the old primary is a replica", func() bool { return role(oc) == "slave" })
	for _, h := range hs {
		eventually(t, 30*time.Second, "the handler's client follows the failover", func() bool {
			return role(h.rdb.UniversalClient) == "master"
		})
	}
}
