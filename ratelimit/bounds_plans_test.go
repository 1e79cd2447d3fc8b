package ratelimit

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// bigPlansDB creates a plans table with bigint columns (room for rows
// past the bounds) in dsn's schema and inserts rows.
func bigPlansDB(t *testing.T, dsn, rows string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{`CREATE TABLE ratelimit_plans (
		plan_key text PRIMARY KEY, events bigint NOT NULL, window_seconds float8 NOT NULL, burst bigint)`,
		`INSERT INTO ratelimit_plans VALUES ` + rows} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// Plan rows past the bounds are skipped with a warning; a request naming
// one gets the zone's own quota (counted), never a store failure.
func TestPlanRowsPastBoundsSkipped(t *testing.T) {
	dsn := testenv.Postgres(t)
	bigPlansDB(t, dsn, `('huge', 2251799813685248, 60, NULL), ('long', 10, 2e9, NULL),
		('refill', 1, 3600, 100000), ('nan', 10, 'NaN', NULL), ('gold', 5, 3600, NULL)`)
	core, logs := observer.New(zap.WarnLevel)
	l, err := loadPlans(&Plans{Postgres: dsn}, limiter.TokenBucket, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.release() })
	for _, key := range []string{"huge", "long", "refill", "nan"} {
		if p, ok, skipped := l.lookupRow(key); ok || !skipped {
			t.Errorf("lookupRow(%q) = %+v, %v, skipped %v; want skipped", key, p, ok, skipped)
		}
	}
	if p, ok := l.lookup("gold"); !ok || p.events != 5 {
		t.Errorf("lookup(gold) = %+v, %v; want 5 events", p, ok)
	}
	warns := logs.FilterMessage("rate limit plans: rows with an invalid quota skipped; their keys get the zone's own quota").All()
	if len(warns) != 1 || warns[0].ContextMap()["skipped"] != int64(4) {
		t.Errorf("warnings %+v, want one with skipped=4", warns)
	}

	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			z := &Zone{Name: "plans-" + store, Key: "{http.request.header.X-API-Key}", Events: 2, Window: caddy.Duration(time.Hour),
				Plans: &Plans{Postgres: dsn, PlanKey: "{http.request.header.X-Plan}"}}
			h := &Handler{Zones: []*Zone{z}}
			if store == "redis" {
				// A generous timeout: a slow round trip would count.
				h.Redis, h.Timeout = sharedRedis(t), caddy.Duration(time.Second)
			}
			provision(t, h)
			errs0 := counterValue(metrics.storeErrors)
			counted0 := counterValue(z.inputs[inputPlan])
			next := new(statusHandler)
			for _, plan := range []string{"huge", "long", "refill", "nan"} {
				got := map[int]int{}
				for range 4 {
					got[do(h, next, get("/", "X-API-Key", "k-"+plan, "X-Plan", plan)).status]++
				}
				if got[http.StatusOK] != 2 || got[http.StatusTooManyRequests] != 2 {
					t.Errorf("plan %s: statuses %v, want the zone's 2 of 4", plan, got)
				}
			}
			if d := counterValue(metrics.storeErrors) - errs0; d != 0 {
				t.Errorf("store_errors_total grew by %v, want 0", d)
			}
			if s := h.breaker.state(); s != "closed" {
				t.Errorf("breaker %s, want closed", s)
			}
			if d := counterValue(z.inputs[inputPlan]) - counted0; d != 16 {
				t.Errorf("invalid_input_total{kind=plan} grew by %v, want 16", d)
			}
			// The plan key is read once too.
			req := get("/", "X-API-Key", "k-gold")
			req.Header.Add("X-Plan", "gold")
			req.Header.Add("X-Plan", "junk")
			if s := do(h, next, req).status; s != http.StatusBadRequest {
				t.Errorf("X-Plan sent twice: status %d, want 400", s)
			}
		})
	}
}

// A row's bounds depend on the zone's algorithm: zones of two algorithms
// reading one table each get their own loader.
func TestPlanRowsPerAlgorithm(t *testing.T) {
	dsn := testenv.Postgres(t)
	bigPlansDB(t, dsn, `('big', 20000, 60, NULL), ('queue', 1, 3600, 100)`)
	load := func(alg string) *planHandle {
		l, err := loadPlans(&Plans{Postgres: dsn}, alg, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.release() })
		return l
	}
	tb, sl, lb := load(limiter.TokenBucket), load(limiter.SlidingLog), load(limiter.LeakyBucket)
	for _, tt := range []struct {
		l    *planHandle
		key  string
		want bool
	}{
		{tb, "big", true}, {sl, "big", false}, {tb, "queue", true}, {lb, "queue", false},
	} {
		if _, ok := tt.l.lookup(tt.key); ok != tt.want {
			t.Errorf("%s loader: lookup(%q) ok = %v, want %v", tt.l.algorithm, tt.key, ok, tt.want)
		}
	}
}
