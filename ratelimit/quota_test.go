package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// staticPlans is a plans handle holding table, without PostgreSQL.
func staticPlans(table map[string]plan) *planHandle {
	l := new(planLoader)
	l.table.Store(&planTable{byKey: table})
	return &planHandle{planLoader: l}
}

func TestZoneQuotaLimitFor(t *testing.T) {
	base := limiter.Limit{Algorithm: limiter.TokenBucket, Events: 100, Window: time.Minute}
	plans := staticPlans(map[string]plan{"gold": {events: 1000, window: time.Hour, burst: 50}})
	tests := []struct {
		name    string
		q       zoneQuota
		vars    map[string]any
		want    limiter.Limit
		source  quotaSource
		wantErr string
	}{
		{name: "plan", q: zoneQuota{base: base, plans: plans, planKey: "{plan}"}, vars: map[string]any{"plan": "gold"},
			want: limiter.Limit{Algorithm: limiter.TokenBucket, Events: 1000, Window: time.Hour, Burst: 50}, source: sourcePlan},
		{name: "unknown plan: static quota", q: zoneQuota{base: base, plans: plans, planKey: "{plan}"}, vars: map[string]any{"plan": "tin"},
			want: base, source: sourceStatic},
		{name: "empty plan key: static quota", q: zoneQuota{base: base, plans: plans, planKey: "{plan}"},
			want: base, source: sourceStatic},
		{name: "dynamic", q: zoneQuota{zone: "api", base: limiter.Limit{Algorithm: limiter.TokenBucket},
			dynamic: &DynamicQuota{Events: "{e}", Window: "{w}", Burst: "{b}"}},
			vars: map[string]any{"e": "30", "w": "10s", "b": " 60 "},
			want: limiter.Limit{Algorithm: limiter.TokenBucket, Events: 30, Window: 10 * time.Second, Burst: 60}, source: sourceDynamic},
		{name: "dynamic events only", q: zoneQuota{zone: "api", base: base, dynamic: &DynamicQuota{Events: "{e}"}},
			vars: map[string]any{"e": 5}, want: limiter.Limit{Algorithm: limiter.TokenBucket, Events: 5, Window: time.Minute}, source: sourceDynamic},
		{name: "unknown plan: dynamic quota", q: zoneQuota{zone: "api", base: base, plans: plans, planKey: "{plan}", dynamic: &DynamicQuota{Events: "{e}"}},
			vars: map[string]any{"plan": "tin", "e": "7"}, want: limiter.Limit{Algorithm: limiter.TokenBucket, Events: 7, Window: time.Minute}, source: sourceDynamic},
		{name: "empty events", q: zoneQuota{zone: "api", base: base, dynamic: &DynamicQuota{Events: "{e}"}},
			wantErr: `zone "api": events {e} expanded to "": must be a positive integer`},
		{name: "zero events", q: zoneQuota{zone: "api", base: base, dynamic: &DynamicQuota{Events: "{e}"}},
			vars: map[string]any{"e": "0"}, wantErr: "must be a positive integer"},
		{name: "text events", q: zoneQuota{zone: "api", base: base, dynamic: &DynamicQuota{Events: "{e}"}},
			vars: map[string]any{"e": "lots"}, wantErr: "must be a positive integer"},
		{name: "negative burst", q: zoneQuota{zone: "api", base: base, dynamic: &DynamicQuota{Burst: "{b}"}},
			vars: map[string]any{"b": "-1"}, wantErr: "must be a non-negative integer"},
		{name: "bad window", q: zoneQuota{zone: "api", base: base, dynamic: &DynamicQuota{Window: "{w}"}},
			vars: map[string]any{"w": "60"}, wantErr: "must be a duration of at least 1ms"},
		{name: "tiny window", q: zoneQuota{zone: "api", base: base, dynamic: &DynamicQuota{Window: "{w}"}},
			vars: map[string]any{"w": "10us"}, wantErr: "must be a duration of at least 1ms"},
		{name: "huge events", q: zoneQuota{zone: "api", base: base, dynamic: &DynamicQuota{Events: "{e}"}},
			vars: map[string]any{"e": "9007199254740993"}, wantErr: "must be at most 2^50"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repl := caddy.NewReplacer()
			for k, v := range tt.vars {
				repl.Set(k, v)
			}
			tt.q.prepare()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			got, src, err := tt.q.limitFor(req, repl)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("limitFor() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("limitFor(): %v", err)
			}
			if got != tt.want || src != tt.source {
				t.Errorf("limitFor() = %+v (%s), want %+v (%s)", got, src, tt.want, tt.source)
			}
		})
	}
}

func TestDynamicQuotaValidate(t *testing.T) {
	for _, tt := range []struct {
		dq     DynamicQuota
		events int64
		window caddy.Duration
		err    string
	}{
		{DynamicQuota{Events: "{e}", Window: "{w}"}, 0, 0, ""},
		{DynamicQuota{Events: "{e}"}, 0, caddy.Duration(time.Minute), ""},
		{DynamicQuota{Events: "100"}, 0, 0, "not a placeholder template"},
		{DynamicQuota{Events: "{e}"}, 5, 0, "events is both static and dynamic"},
		{DynamicQuota{Window: "{w}"}, 5, caddy.Duration(time.Second), "window is both static and dynamic"},
	} {
		err := tt.dq.validate(tt.events, 0, tt.window)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("validate(%+v) = %v, want %q", tt.dq, err, tt.err)
		}
	}
}

func TestPolicyItemAndLocalLimit(t *testing.T) {
	l := limiter.Limit{Algorithm: limiter.TokenBucket, Events: 10, Window: 1500 * time.Millisecond, Burst: 21}
	if got, want := policyItem(`"api"`, l), `"api";q=10;w=2`; got != want {
		t.Errorf("policyItem = %s, want %s", got, want)
	}
	if got, want := localLimit(l, 4), (limiter.Limit{Algorithm: limiter.TokenBucket, Events: 3, Window: 1500 * time.Millisecond, Burst: 6}); got != want {
		t.Errorf("localLimit = %+v, want %+v", got, want)
	}
}

func TestCaddyfileDynamicQuotaAndPlans(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  func(z *Zone) bool
		err   string
	}{
		{name: "placeholders", input: `ratelimit {
			zone api {
				key {http.request.header.X-API-Key}
				events {plan_events}
				burst {plan_burst}
				window {plan_window}
			}
		}`, want: func(z *Zone) bool {
			return z.Events == 0 && z.Window == 0 && z.Burst == 0 && z.Dynamic != nil &&
				*z.Dynamic == DynamicQuota{Events: "{plan_events}", Burst: "{plan_burst}", Window: "{plan_window}"}
		}},
		{name: "static window, dynamic events", input: `ratelimit {
			zone api {
				key {client_ip}
				events {plan_events}
				window 1m
			}
		}`, want: func(z *Zone) bool {
			return z.Window == caddy.Duration(time.Minute) && z.Dynamic != nil && z.Dynamic.Events == "{plan_events}" && z.Dynamic.Window == ""
		}},
		{name: "plans", input: `ratelimit {
			zone api {
				key {http.request.header.X-API-Key}
				events 60
				window 1m
				plans postgres postgres://db/billing {
					table api_plans
					refresh 10s
					plan_key {plan}
				}
			}
		}`, want: func(z *Zone) bool {
			return z.Plans != nil && *z.Plans == Plans{Postgres: "postgres://db/billing", Table: "api_plans",
				Refresh: caddy.Duration(10 * time.Second), PlanKey: "{plan}"} && z.Events == 60
		}},
		{name: "static events still checked", input: "ratelimit {\nzone api {\nkey k\nevents lots\nwindow 1m\n}\n}",
			err: "invalid events 'lots'"},
		{name: "dynamic events still required", input: "ratelimit {\nzone api {\nkey k\nwindow {w}\n}\n}",
			err: "events is required"},
		{name: "dynamic window still required", input: "ratelimit {\nzone api {\nkey k\nevents {e}\n}\n}",
			err: "window is required"},
		{name: "plans error", input: "ratelimit {\nzone api {\nkey k\nevents 1\nwindow 1m\nplans redis x\n}\n}",
			err: "unknown plans source 'redis'"},
		{name: "duplicate plans", input: "ratelimit {\nzone api {\nkey k\nevents 1\nwindow 1m\nplans postgres a\nplans postgres b\n}\n}",
			err: "duplicate subdirective 'plans'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if z := h.Zones[0]; !tt.want(z) {
				t.Errorf("zone = %+v (dynamic %+v, plans %+v)", z, z.Dynamic, z.Plans)
			}
			if err := h.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestZoneValidateDynamic(t *testing.T) {
	for _, tt := range []struct {
		z   Zone
		err string
	}{
		{Zone{Name: "a", Key: "k", Dynamic: &DynamicQuota{Events: "{e}", Window: "{w}"}}, ""},
		{Zone{Name: "a", Key: "k", Window: caddy.Duration(time.Second), Dynamic: &DynamicQuota{Events: "{e}"}}, ""},
		{Zone{Name: "a", Key: "k", Window: caddy.Duration(time.Second)}, "events is required"},
		{Zone{Name: "a", Key: "k", Events: 1, Dynamic: &DynamicQuota{Burst: "{b}"}}, "window is required"},
		{Zone{Name: "a", Key: "k", Window: caddy.Duration(time.Second), Dynamic: &DynamicQuota{Events: "100"}}, "not a placeholder template"},
		{Zone{Name: "a", Key: "k", Events: 1, Window: caddy.Duration(time.Second), Plans: &Plans{}}, "a postgres connection string is required"},
	} {
		err := tt.z.validate()
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("validate(%+v) = %v, want %q", tt.z, err, tt.err)
		}
	}
}
