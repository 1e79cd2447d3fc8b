package ratelimit

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

func TestParsePlans(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  Plans
		err   string
	}{
		{name: "dsn only", input: `plans postgres postgres://db/app`,
			want: Plans{Postgres: "postgres://db/app"}},
		{name: "all", input: `plans postgres {env.PLANS_DSN} {
			table billing.plans
			refresh 10s
			plan_key {http.request.header.X-Plan}
		}`, want: Plans{Postgres: "{env.PLANS_DSN}", Table: "billing.plans",
			Refresh: caddy.Duration(10 * time.Second), PlanKey: "{http.request.header.X-Plan}"}},
		{name: "no dsn", input: `plans postgres`, err: "wrong argument count"},
		{name: "extra arg", input: `plans postgres a b`, err: "wrong argument count"},
		{name: "unknown source", input: `plans mysql dsn`, err: "unknown plans source 'mysql'"},
		{name: "bad table", input: "plans postgres dsn {\ntable plans;drop\n}", err: `invalid table "plans;drop"`},
		{name: "bad refresh", input: "plans postgres dsn {\nrefresh soon\n}", err: "invalid refresh 'soon'"},
		{name: "zero refresh", input: "plans postgres dsn {\nrefresh 0s\n}", err: "invalid refresh '0s': must be a positive duration"},
		{name: "duplicate", input: "plans postgres dsn {\ntable a\ntable b\n}", err: "duplicate subdirective 'table'"},
		{name: "unknown", input: "plans postgres dsn {\ncache 1\n}", err: "unrecognized subdirective 'cache'"},
		{name: "missing value", input: "plans postgres dsn {\nplan_key\n}", err: "wrong argument count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := caddyfile.NewTestDispenser(tt.input)
			d.Next()
			got, err := parsePlans(d)
			if err == nil {
				err = got.validate()
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("parsePlans(%q) error = %v, want %q", tt.input, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parsePlans(%q): %v", tt.input, err)
			}
			if *got != tt.want {
				t.Errorf("parsePlans(%q) = %+v, want %+v", tt.input, *got, tt.want)
			}
		})
	}
}

func TestPlansValidate(t *testing.T) {
	for _, tt := range []struct {
		p   Plans
		err string
	}{
		{Plans{Postgres: "postgres://x"}, ""},
		{Plans{}, "a postgres connection string is required"},
		{Plans{Postgres: "x", Table: "a b"}, "invalid table"},
		{Plans{Postgres: "x", Refresh: -1}, "refresh must be > 0"},
	} {
		err := tt.p.validate()
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("validate(%+v) = %v, want %q", tt.p, err, tt.err)
		}
	}
}

// plansDB creates the plans table in dsn's schema and returns an exec
// helper.
func plansDB(t *testing.T, dsn string) func(sql string, args ...any) {
	t.Helper()
	exec := func(sql string, args ...any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("connecting: %v", err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`CREATE TABLE ratelimit_plans (
		plan_key text PRIMARY KEY,
		events integer NOT NULL,
		window_seconds numeric NOT NULL,
		burst integer)`)
	return exec
}

// openPlans loads the plans of p and releases them when the test ends.
func openPlans(t *testing.T, p *Plans) *planHandle {
	t.Helper()
	h, err := loadPlans(p, limiter.TokenBucket, zap.NewNop())
	if err != nil {
		t.Fatalf("loadPlans: %v", err)
	}
	t.Cleanup(func() {
		if err := h.release(); err != nil {
			t.Errorf("release: %v", err)
		}
	})
	return h
}

// waitFor polls cond every 10ms until it holds or timeout passes, and
// returns how long it took.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func TestPlansFromPostgres(t *testing.T) {
	dsn := testenv.Postgres(t)
	exec := plansDB(t, dsn)
	exec(`INSERT INTO ratelimit_plans VALUES
		('free', 10, 60, NULL), ('pro', 1000, 60, 2000), ('half', 5, 0.5, 0),
		('broken', 0, 60, NULL), ('negative', 10, 60, -1), ('instant', 10, 0, NULL)`)
	const refresh = 200 * time.Millisecond
	l := openPlans(t, &Plans{Postgres: dsn, Refresh: caddy.Duration(refresh)})

	want := map[string]plan{
		"free": {events: 10, window: time.Minute},
		"pro":  {events: 1000, window: time.Minute, burst: 2000},
		"half": {events: 5, window: 500 * time.Millisecond},
	}
	for key, w := range want {
		if got, ok := l.lookup(key); !ok || got != w {
			t.Errorf("lookup(%q) = %+v, %v; want %+v", key, got, ok, w)
		}
	}
	for _, key := range []string{"broken", "negative", "instant", "unknown", ""} {
		if got, ok := l.lookup(key); ok {
			t.Errorf("lookup(%q) = %+v, want no plan", key, got)
		}
	}

	// A changed plan applies within one refresh, with no reload.
	exec(`UPDATE ratelimit_plans SET events = 20 WHERE plan_key = 'free'`)
	exec(`INSERT INTO ratelimit_plans VALUES ('team', 300, 3600, NULL)`)
	took := waitFor(t, refresh+2*time.Second, "plan change", func() bool {
		p, ok := l.lookup("team")
		return ok && p.events == 300 && l.lookupEvents("free") == 20
	})
	t.Logf("plan change applied after %v (refresh %v)", took, refresh)

	// Zones sharing a table share the loader.
	other := openPlans(t, &Plans{Postgres: dsn, Refresh: caddy.Duration(refresh)})
	if other.planLoader != l.planLoader {
		t.Error("two zones reading the same table got two loaders")
	}
}

// lookupEvents is the events of key's plan, 0 when it has none.
func (l *planLoader) lookupEvents(key string) int64 {
	p, _ := l.lookup(key)
	return p.events
}

func TestPlansSurvivePostgresOutage(t *testing.T) {
	srv := testenv.StartPostgres(t)
	exec := plansDB(t, srv.DSN())
	exec(`INSERT INTO ratelimit_plans VALUES ('gold', 500, 60, NULL)`)
	l := openPlans(t, &Plans{Postgres: srv.DSN(), Refresh: caddy.Duration(100 * time.Millisecond)})
	if got := l.lookupEvents("gold"); got != 500 {
		t.Fatalf("gold events = %d, want 500", got)
	}

	exec(`CHECKPOINT`) // the throwaway server stops at once, without one
	srv.Stop()
	waitFor(t, 10*time.Second, "failed refreshes", func() bool { return l.fails.Load() >= 2 })
	if got := l.lookupEvents("gold"); got != 500 {
		t.Errorf("with PostgreSQL down, gold events = %d, want the last loaded 500", got)
	}

	srv.Start()
	exec(`UPDATE ratelimit_plans SET events = 50`)
	waitFor(t, 10*time.Second, "plans after PostgreSQL returned", func() bool { return l.lookupEvents("gold") == 50 })
}

func TestPlansUnreachableAtStart(t *testing.T) {
	srv := testenv.StartPostgres(t)
	exec := plansDB(t, srv.DSN())
	exec(`INSERT INTO ratelimit_plans VALUES ('gold', 500, 60, NULL)`)
	exec(`CHECKPOINT`) // the throwaway server stops at once, without one
	srv.Stop()
	// Loading does not fail: the zone's own quota applies meanwhile.
	l := openPlans(t, &Plans{Postgres: srv.DSN(), Refresh: caddy.Duration(100 * time.Millisecond)})
	if _, ok := l.lookup("gold"); ok {
		t.Fatal("a plan found while PostgreSQL was down at start")
	}
	srv.Start()
	waitFor(t, 10*time.Second, "plans once PostgreSQL answered", func() bool { return l.lookupEvents("gold") == 500 })
}

// TestPlansCalendar: a plans table with the optional calendar and tz
// columns gives a row a calendar period (in its time zone, or the zone's),
// another row keeps its window, a bad calendar or tz is skipped, and a
// request without a plan gets the zone's own calendar quota.
func TestPlansCalendar(t *testing.T) {
	dsn := testenv.Postgres(t)
	exec := plansDB(t, dsn)
	exec(`ALTER TABLE ratelimit_plans ADD COLUMN calendar text, ADD COLUMN tz text`)
	exec(`INSERT INTO ratelimit_plans VALUES
		('free', 3, 0, NULL, 'month', NULL), ('tokyo', 4, 0, NULL, 'day', 'Asia/Tokyo'),
		('pro', 5, 60, NULL, NULL, NULL), ('yearly', 5, 0, NULL, 'year', NULL), ('mars', 5, 0, NULL, 'day', 'Mars/Olympus')`)
	h := &Handler{Zones: []*Zone{{Name: "monthly", Key: "{http.request.header.X-API-Key}", Events: 2, Algorithm: limiter.FixedWindow,
		Calendar: "day", TZ: "Europe/Berlin", Plans: &Plans{Postgres: dsn}}}, Redis: sharedRedis(t)}
	provision(t, h)
	berlin, tokyo := mustLoc(t, "Europe/Berlin"), mustLoc(t, "Asia/Tokyo")
	for _, c := range []struct {
		key     string
		allowed int
		cal     limiter.Calendar // the period Retry-After counts to (zero: a 60s window)
	}{
		{"free", 3, limiter.Calendar{Unit: limiter.CalendarMonth, Loc: berlin}},
		{"tokyo", 4, limiter.Calendar{Unit: limiter.CalendarDay, Loc: tokyo}},
		{"pro", 5, limiter.Calendar{}},
		{"yearly", 2, limiter.Calendar{Unit: limiter.CalendarDay, Loc: berlin}}, // skipped: the zone's
		{"mars", 2, limiter.Calendar{Unit: limiter.CalendarDay, Loc: berlin}},
	} {
		var last response
		n := 0
		for range 8 {
			if last = do(h, new(statusHandler), get("/", "X-API-Key", c.key)); last.status == http.StatusOK {
				n++
			}
		}
		wantRetry := time.Minute - time.Duration(time.Now().UnixNano()%int64(time.Minute)) // a fixed window of 60s
		if c.cal.On() {
			_, end := c.cal.Period(time.Now())
			wantRetry = time.Until(end)
		}
		retry, _ := strconv.Atoi(last.header.Get("Retry-After"))
		if n != c.allowed || math.Abs(float64(retry)-wantRetry.Seconds()) > 2 {
			t.Errorf("%s: %d allowed, Retry-After %ds; want %d allowed, about %.0fs", c.key, n, retry, c.allowed, wantRetry.Seconds())
		}
	}
}
