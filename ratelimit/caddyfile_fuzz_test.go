package ratelimit

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// FuzzUnmarshalCaddyfile: no input panics the parser; a handler it accepts
// survives Validate and a JSON round trip (what Caddy does with it), its
// concurrency zones hold a lease_ttl within bounds and nothing they refuse
// (see checkConcurrency), and a ban Validate accepts is one the stores
// accept (never a store error per request).
func FuzzUnmarshalCaddyfile(f *testing.F) {
	for _, seed := range []string{
		"ratelimit",
		"ratelimit {\n zone api {\n key {http.request.header.X-API-Key}\n events 10\n window 1m\n }\n}",
		"ratelimit /api/* {\n zone a {\n key {client_ip}\n events 5\n window 1s\n algorithm sliding_window\n burst 3\n cost {http.request.header.X-Cost}\n on_error local\n dry_run\n count_status 401 403\n match {\n method POST\n }\n }\n redis redis://127.0.0.1:6379/0\n timeout 20ms\n on_error closed\n instances 3\n hash_tag {http.request.header.X-Tenant}\n headers ietf\n status 503\n log_keys\n}",
		"ratelimit {\n zone a {\n key k\n events 1\n window 1h\n algorithm leaky_bucket\n burst 10\n }\n redis {\n addresses 127.0.0.1:1 127.0.0.1:2\n master_name m\n password {env.P}\n key_prefix rl\n pool_size 9\n }\n}",
		"ratelimit {\n zone a {\n events -1\n window x\n }\n zone a\n}",
		"ratelimit {\n zone \"\" {\n key \"\"\n events 99999999999999999999\n window 0s\n }\n}",
		"ratelimit {\n timeout\n status 99 100\n headers nope\n instances 0\n}",
		"ratelimit {\n zone {\n key {\n }\n}",
		"ratelimit {\n redis {\n url\n }\n unknown\n}",
		"ratelimit {\n zone c {\n key {client_ip}\n events 4\n algorithm concurrency\n lease_ttl 30s\n }\n}",
		"ratelimit {\n zone c {\n key k\n events 4\n algorithm concurrency\n window 1m\n count_status 401\n approximate 1s\n }\n}",
		"ratelimit {\n zone a {\n key {http.ratelimit.client_network}\n events 1\n window 1s\n }\n client_network 24 56\n jitter 0.5\n body problem\n}",
		"ratelimit {\n zone a {\n key k\n events 1\n window 1s\n }\n client_network 33 -1\n jitter NaN\n body html\n}",
		"ratelimit {\n zone a {\n key k\n events 1\n window 1s\n }\n jitter +Inf\n}",
		"ratelimit {\n zone a {\n key k\n events 1\n window 1s\n ban 10m after 5\n ban_max 2h\n }\n}",
		"ratelimit {\n zone a {\n key k\n events 1\n window 1s\n ban 1us after 0\n ban_max 87601h\n approximate 1ms\n }\n}",
		"ratelimit {\n zone a {\n key k\n events 1\n window 1s\n ban 2h\n ban_max 1h\n dry_run\n }\n}",
		"ratelimit {\n zone a {\n key k\n events 1\n window 1s\n ban 1m before -1 extra\n }\n}",
		"ratelimit {\n zone a {\n key k\n events 1\n window 1s\n ban 1m\n ban_exempt 100.64.0.0/10 ::ffff:10.0.0.0/104 fe80::1%eth0 10.0/8 key\n }\n}",
		"ratelimit {\n zone a {\n key {http.ratelimit.jwt.sub}:{http.ratelimit.jwt.claim.t}\n events 1\n window 1s\n }\n jwt {\n jwks_url https://idp.example/jwks\n secret {env.S}\n refresh 1m\n issuer i\n audience a b\n leeway 0\n algorithms RS256 HS256\n header X-T\n on_invalid client\n }\n}",
		"ratelimit {\n zone a {\n key {http.ratelimit.jwt.x}\n events 1\n window 1s\n }\n jwt x {\n algorithms none\n leeway -1s\n refresh 0\n jwks_url http://x\n }\n}",
		"ratelimit {\n zone m {\n key k\n events 3\n algorithm fixed_window\n window 1mo calendar tz Europe/Berlin\n notify 80% 100%\n usage on keep 13\n }\n}",
		"ratelimit {\n zone m {\n key k\n events 1125899906842624\n algorithm fixed_window\n window 87600h\n notify 1% 2 3% 99 100%\n usage on keep 1000\n }\n}",
		"ratelimit {\n zone m {\n key k\n events 1\n window 1s\n notify 0% 101% -5%\n usage on keep -1 extra\n }\n}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		h := new(Handler)
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil {
			return
		}
		if h.Validate() == nil {
			for _, z := range h.Zones {
				if err := limiter.CheckBan(z.limiterBan()); err != nil {
					t.Fatalf("zone %q: valid config, ban the store refuses: %v", z.Name, err)
				}
				checkStoreTakesMarks(t, z)
			}
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatalf("accepted config does not marshal: %v", err)
		}
		var back Handler
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("accepted config does not unmarshal: %v\n%s", err, b)
		}
		for _, z := range h.Zones {
			if z.Algorithm == limiter.Concurrency && !acceptableConcurrency(z) {
				t.Fatalf("accepted concurrency zone %+v", z)
			}
		}
	})
}

// checkStoreTakesMarks: a valid zone's notify marks and usage are an Ask
// the store decides (never an ErrInvalidAsk per request).
func checkStoreTakesMarks(t *testing.T, z *Zone) {
	t.Helper()
	if len(z.Notify) == 0 && z.Usage == nil || z.Dynamic != nil || z.Plans != nil {
		return
	}
	l := limiter.Limit{Algorithm: z.Algorithm, Events: z.Events, Window: z.window(), Burst: z.Burst, Calendar: z.calendar()}
	a := limiter.Ask{Key: "rl:" + z.Name + ":k", Limit: l, Cost: 1, Thresholds: z.marksFor(z.Events)}
	if keep := z.usageKeep(); keep > 0 {
		a.Usage = limiter.Usage{Key: "k", Keep: keep}
	}
	if _, err := limiter.NewMemoryStore(nil, 0).Decide(context.Background(), []limiter.Ask{a}); err != nil {
		t.Fatalf("zone %q: valid notify %v / usage %+v, the store refuses %+v: %v", z.Name, z.Notify, z.Usage, a, err)
	}
}

// acceptableConcurrency is what a concurrency zone the parser accepted
// must be: a lease_ttl of 1s to 24h (or the default), no window, burst,
// cost, count_status or approximate, and a quota the stores accept.
func acceptableConcurrency(z *Zone) bool {
	ttl := time.Duration(z.LeaseTTL)
	return (ttl == 0 || ttl >= time.Second && ttl <= 24*time.Hour) &&
		z.Window == 0 && z.Burst == 0 && z.Cost == "" && len(z.CountStatus) == 0 && z.Approximate == 0 &&
		(z.Events == 0 || limiter.CheckLimit(limiter.Limit{Algorithm: limiter.Concurrency, Events: z.Events, Window: z.window()}) == nil)
}
