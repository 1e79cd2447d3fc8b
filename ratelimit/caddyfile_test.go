package ratelimit

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

var update = flag.Bool("update", false, "rewrite golden files")

// parse unmarshals input; for compact test cases, "; " separates lines and
// "{ " / " }" open and close blocks on one line.
func parse(t *testing.T, input string) (*Handler, error) {
	t.Helper()
	input = strings.NewReplacer("; ", "\n", "{ ", "{\n", " }", "\n}").Replace(input)
	var h Handler
	err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
	return &h, err
}

// forgetParse clears what parsing leaves beside the config: the Caddyfile
// positions and the count of validations.
func forgetParse(h *Handler) {
	h.pos, h.validations = nil, 0
	for _, z := range h.Zones {
		z.pos = nil
	}
}

func TestUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  Handler
	}{
		{
			name: "minimal zone with defaults",
			input: `ratelimit {
				zone api {
					key {http.request.header.X-API-Key}
					events 100
					window 1m
				}
			}`,
			want: Handler{Zones: []*Zone{{
				Name: "api", Key: "{http.request.header.X-API-Key}", Events: 100, Window: caddy.Duration(time.Minute),
			}}},
		},
		{
			name: "every zone subdirective",
			input: `ratelimit {
				zone login {
					key          {client_ip}
					events       5
					window       10m
					algorithm    sliding_log
					burst        7
					cost         {http.request.header.X-Cost}
					count_status 401 403
					on_error     closed
					dry_run
				}
			}`,
			want: Handler{Zones: []*Zone{{
				Name: "login", Key: "{client_ip}", Events: 5, Window: caddy.Duration(10 * time.Minute),
				Algorithm: limiter.SlidingLog, Burst: 7, Cost: "{http.request.header.X-Cost}",
				CountStatus: []int{401, 403}, OnError: "closed", DryRun: true,
			}}},
		},
		{
			name: "ban",
			input: `ratelimit {
				zone a { key k; events 1; window 1s; ban 10m }
				zone b { key k; events 1; window 1s; ban 1m after 5; ban_max 2h }
				zone c { key k; events 1; window 1s; ban 1s; ban_exempt 100.64.0.0/10 2001:db8::1 partner-key }
			}`,
			want: Handler{Zones: []*Zone{
				{Name: "a", Key: "k", Events: 1, Window: caddy.Duration(time.Second), Ban: caddy.Duration(10 * time.Minute)},
				{Name: "b", Key: "k", Events: 1, Window: caddy.Duration(time.Second), Ban: caddy.Duration(time.Minute), BanAfter: 5, BanMax: caddy.Duration(2 * time.Hour)},
				{Name: "c", Key: "k", Events: 1, Window: caddy.Duration(time.Second), Ban: caddy.Duration(time.Second), BanExempt: []string{"100.64.0.0/10", "2001:db8::1", "partner-key"}},
			}},
		},
		{
			name: "every algorithm and a numeric cost",
			input: `ratelimit {
				zone a { key k; events 1; window 1s; algorithm token_bucket; cost 0 }
				zone b { key k; events 1; window 1s; algorithm sliding_window }
				zone c { key k; events 1; window 1s; algorithm fixed_window }
				zone d { key k; events 1; window 1s; algorithm sliding_log }
				zone e { key k; events 1; window 1s; algorithm leaky_bucket; burst 3; cost 2 }
			}`,
			want: Handler{Zones: []*Zone{
				{Name: "a", Key: "k", Events: 1, Window: caddy.Duration(time.Second), Algorithm: limiter.TokenBucket, Cost: "0"},
				{Name: "b", Key: "k", Events: 1, Window: caddy.Duration(time.Second), Algorithm: limiter.SlidingWindow},
				{Name: "c", Key: "k", Events: 1, Window: caddy.Duration(time.Second), Algorithm: limiter.FixedWindow},
				{Name: "d", Key: "k", Events: 1, Window: caddy.Duration(time.Second), Algorithm: limiter.SlidingLog},
				{Name: "e", Key: "k", Events: 1, Window: caddy.Duration(time.Second), Algorithm: limiter.LeakyBucket, Burst: 3, Cost: "2"},
			}},
		},
		{
			name: "every handler subdirective",
			input: `ratelimit {
				zone api { key {client_ip}; events 10; window 1s }
				redis redis://127.0.0.1:6379/2
				timeout   25ms
				on_error  local
				instances 3
				hash_tag  {http.request.header.X-Tenant}
				headers   ietf
				status    503
				log_keys
			}`,
			want: Handler{
				Zones:     []*Zone{{Name: "api", Key: "{client_ip}", Events: 10, Window: caddy.Duration(time.Second)}},
				Redis:     &redispool.Config{URL: "redis://127.0.0.1:6379/2"},
				Timeout:   caddy.Duration(25 * time.Millisecond),
				OnError:   "local",
				Instances: 3,
				HashTag:   "{http.request.header.X-Tenant}",
				Headers:   "ietf",
				Status:    503,
				LogKeys:   true,
			},
		},
		{
			name: "redis block",
			input: `ratelimit {
				zone api { key {client_ip}; events 10; window 1s }
				redis {
					addresses 10.0.0.1:7000 10.0.0.2:7000
					password {env.REDIS_PASSWORD}
					key_prefix rl
				}
				on_error closed
				headers legacy
			}`,
			want: Handler{
				Zones: []*Zone{{Name: "api", Key: "{client_ip}", Events: 10, Window: caddy.Duration(time.Second)}},
				Redis: &redispool.Config{Addresses: []string{"10.0.0.1:7000", "10.0.0.2:7000"},
					Password: "{env.REDIS_PASSWORD}", KeyPrefix: "rl"},
				OnError: "closed",
				Headers: "legacy",
			},
		},
		{
			name: "header modes both and none, on_error open",
			input: `ratelimit {
				zone api { key k; events 1; window 1h; on_error open }
				headers none
			}`,
			want: Handler{
				Zones:   []*Zone{{Name: "api", Key: "k", Events: 1, Window: caddy.Duration(time.Hour), OnError: "open"}},
				Headers: "none",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(t, tt.input)
			if err != nil {
				t.Fatalf("UnmarshalCaddyfile: %v", err)
			}
			forgetParse(got)
			if !reflect.DeepEqual(*got, tt.want) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(tt.want)
				t.Errorf("UnmarshalCaddyfile =\n%s\nwant\n%s", gj, wj)
			}
		})
	}
}

func TestUnmarshalCaddyfileMatch(t *testing.T) {
	h, err := parse(t, `ratelimit {
		zone writes {
			key {client_ip}
			events 10
			window 1s
			match {
				method POST PUT
				path /api/*
			}
		}
	}`)
	if err != nil {
		t.Fatalf("UnmarshalCaddyfile: %v", err)
	}
	m := h.Zones[0].MatchRaw
	if string(m["method"]) != `["POST","PUT"]` || string(m["path"]) != `["/api/*"]` || len(m) != 2 {
		t.Errorf("match = %s, want method and path matchers", mustJSON(t, m))
	}
}

func TestUnmarshalCaddyfileErrors(t *testing.T) {
	const okZone = "zone api { key k; events 1; window 1s }\n"
	tests := []struct {
		name, input, want string
	}{
		{"no zone", `ratelimit { timeout 10ms }`, "at least one zone"},
		{"argument on directive", `ratelimit foo { ` + okZone + ` }`, "wrong argument count"},
		{"unknown subdirective", `ratelimit { ` + okZone + ` bogus 1 }`, "unrecognized subdirective 'bogus'"},
		{"max_keys zero", `ratelimit { ` + okZone + ` max_keys 0 }`, "invalid max_keys '0'"},
		{"max_keys word", `ratelimit { ` + okZone + ` max_keys lots }`, "invalid max_keys 'lots'"},
		{"max_keys no arg", `ratelimit { ` + okZone + ` max_keys }`, "wrong argument count"},
		{"unknown zone subdirective", `ratelimit { zone api { key k; events 1; window 1s; bogus } }`, "unrecognized subdirective 'bogus'"},
		{"zone without name", `ratelimit { zone { key k; events 1; window 1s } }`, "wrong argument count"},
		{"zone with two names", `ratelimit { zone a b { key k; events 1; window 1s } }`, "wrong argument count"},
		{"bad zone name", `ratelimit { zone a:b { key k; events 1; window 1s } }`, "invalid zone name 'a:b'"},
		{"duplicate zone", `ratelimit { ` + okZone + okZone + ` }`, "duplicate zone 'api'"},
		{"missing key", `ratelimit { zone api { events 1; window 1s } }`, "key is required"},
		{"missing events", `ratelimit { zone api { key k; window 1s } }`, "events is required"},
		{"missing window", `ratelimit { zone api { key k; events 1 } }`, "window is required"},
		{"events zero", `ratelimit { zone api { key k; events 0; window 1s } }`, "events is required"},
		{"events negative", `ratelimit { zone api { key k; events -5; window 1s } }`, "invalid events '-5'"},
		{"events not a number", `ratelimit { zone api { key k; events many; window 1s } }`, "invalid events 'many'"},
		{"events no arg", `ratelimit { zone api { key k; events; window 1s } }`, "wrong argument count"},
		{"events two args", `ratelimit { zone api { key k; events 1 2; window 1s } }`, "wrong argument count"},
		{"bad window", `ratelimit { zone api { key k; events 1; window soon } }`, "invalid window 'soon'"},
		{"zero window", `ratelimit { zone api { key k; events 1; window 0s } }`, "window is required"},
		{"unknown algorithm", `ratelimit { zone api { key k; events 1; window 1s; algorithm gcra } }`, "unknown algorithm 'gcra'"},
		{"bad burst", `ratelimit { zone api { key k; events 1; window 1s; burst -1 } }`, "invalid burst '-1'"},
		{"bad cost", `ratelimit { zone api { key k; events 1; window 1s; cost -2 } }`, `invalid cost "-2"`},
		{"bad cost word", `ratelimit { zone api { key k; events 1; window 1s; cost lots } }`, `invalid cost "lots"`},
		{"key no arg", `ratelimit { zone api { key; events 1; window 1s } }`, "wrong argument count"},
		{"key two args", `ratelimit { zone api { key a b; events 1; window 1s } }`, "wrong argument count"},
		{"duplicate zone subdirective", `ratelimit { zone api { key k; key j; events 1; window 1s } }`, "duplicate subdirective 'key'"},
		{"match with argument", `ratelimit { zone api { key k; events 1; window 1s; match foo } }`, "wrong argument count"},
		{"empty match", `ratelimit { zone api { key k; events 1; window 1s; match { } } }`, "match needs at least one matcher"},
		{"unknown matcher", `ratelimit { zone api { key k; events 1; window 1s; match { nosuch x } } }`, "getting matcher module 'nosuch'"},
		{"count_status no arg", `ratelimit { zone api { key k; events 1; window 1s; count_status } }`, "wrong argument count"},
		{"count_status bad", `ratelimit { zone api { key k; events 1; window 1s; count_status 401 abc } }`, "invalid count_status 'abc'"},
		{"count_status out of range", `ratelimit { zone api { key k; events 1; window 1s; count_status 999 } }`, "invalid count_status '999'"},
		{"zone on_error bad", `ratelimit { zone api { key k; events 1; window 1s; on_error maybe } }`, `invalid on_error "maybe"`},
		{"dry_run with arg", `ratelimit { zone api { key k; events 1; window 1s; dry_run yes } }`, "wrong argument count"},
		{"ban no arg", `ratelimit { zone api { key k; events 1; window 1s; ban } }`, "wrong argument count"},
		{"ban two args", `ratelimit { zone api { key k; events 1; window 1s; ban 1m 5 } }`, "wrong argument count"},
		{"ban after without n", `ratelimit { zone api { key k; events 1; window 1s; ban 1m after } }`, "wrong argument count"},
		{"ban bad keyword", `ratelimit { zone api { key k; events 1; window 1s; ban 1m before 5 } }`, "wrong argument count"},
		{"ban bad duration", `ratelimit { zone api { key k; events 1; window 1s; ban soon } }`, "invalid ban 'soon'"},
		{"ban zero", `ratelimit { zone api { key k; events 1; window 1s; ban 0s } }`, "invalid ban '0s'"},
		{"ban after word", `ratelimit { zone api { key k; events 1; window 1s; ban 1m after many } }`, "invalid ban after 'many'"},
		{"ban after zero", `ratelimit { zone api { key k; events 1; window 1s; ban 1m after 0 } }`, "invalid ban after '0'"},
		{"ban after negative", `ratelimit { zone api { key k; events 1; window 1s; ban 1m after -2 } }`, "invalid ban after '-2'"},
		{"ban too short", `ratelimit { zone api { key k; events 1; window 1s; ban 1us } }`, "must be at least 1ms"},
		{"ban too long", `ratelimit { zone api { key k; events 1; window 1s; ban 87601h; ban_max 87601h } }`, "at most 87600h0m0s"},
		{"ban_max below ban", `ratelimit { zone api { key k; events 1; window 1s; ban 1h; ban_max 1m } }`, "invalid ban_max 1m0s: must be at least ban (1h0m0s)"},
		{"ban_max too long", `ratelimit { zone api { key k; events 1; window 1s; ban 1h; ban_max 87601h } }`, "ban_max 87601h0m0s: must be at least the ban"},
		{"ban_max without ban", `ratelimit { zone api { key k; events 1; window 1s; ban_max 1h } }`, "ban_max needs ban"},
		{"ban_max bad", `ratelimit { zone api { key k; events 1; window 1s; ban 1m; ban_max never } }`, "invalid ban_max 'never'"},
		{"ban_exempt no arg", `ratelimit { zone api { key k; events 1; window 1s; ban 1m; ban_exempt } }`, "wrong argument count"},
		{"ban_exempt without ban", `ratelimit { zone api { key k; events 1; window 1s; ban_exempt 10.0.0.0/8 } }`, "ban_exempt needs ban"},
		{"ban_exempt bad network", `ratelimit { zone api { key k; events 1; window 1s; ban 1m; ban_exempt 10.0.0.0/33 } }`, "invalid ban_exempt network '10.0.0.0/33'"},
		{"ban_exempt network typo", `ratelimit { zone api { key k; events 1; window 1s; ban 1m; ban_exempt 10.0.0/8 } }`, "invalid ban_exempt network '10.0.0/8'"},
		{"ban with concurrency", `ratelimit { zone api { key k; events 1; algorithm concurrency; ban 1m } }`, "ban does not work with a concurrency zone"},
		{"ban with approximate", `ratelimit { zone api { key k; events 1; window 1s; ban 1m; approximate 10ms } }`, "ban does not work with approximate"},
		{"bad timeout", `ratelimit { ` + okZone + ` timeout fast }`, "invalid timeout 'fast'"},
		{"zero timeout", `ratelimit { ` + okZone + ` timeout 0s }`, "invalid timeout '0s'"},
		{"timeout no arg", `ratelimit { ` + okZone + ` timeout }`, "wrong argument count"},
		{"bad on_error", `ratelimit { ` + okZone + ` on_error sometimes }`, `invalid on_error "sometimes"`},
		{"on_error two args", `ratelimit { ` + okZone + ` on_error open closed }`, "wrong argument count"},
		{"bad instances", `ratelimit { ` + okZone + ` instances 0 }`, "invalid instances '0'"},
		{"instances word", `ratelimit { ` + okZone + ` instances three }`, "invalid instances 'three'"},
		{"hash_tag no arg", `ratelimit { ` + okZone + ` hash_tag }`, "wrong argument count"},
		{"bad headers", `ratelimit { ` + okZone + ` headers draft }`, `invalid headers "draft"`},
		{"bad status", `ratelimit { ` + okZone + ` status 200 }`, "invalid status '200'"},
		{"status word", `ratelimit { ` + okZone + ` status teapot }`, "invalid status 'teapot'"},
		{"status two args", `ratelimit { ` + okZone + ` status 429 503 }`, "wrong argument count"},
		{"log_keys with arg", `ratelimit { ` + okZone + ` log_keys yes }`, "wrong argument count"},
		{"duplicate subdirective", `ratelimit { ` + okZone + ` timeout 1s; timeout 2s }`, "duplicate subdirective 'timeout'"},
		{"client_network one arg", `ratelimit { ` + okZone + ` client_network 24 }`, "wrong argument count"},
		{"client_network word", `ratelimit { ` + okZone + ` client_network 24 many }`, "invalid client_network ipv6 bits 'many'"},
		{"client_network ipv4 too long", `ratelimit { ` + okZone + ` client_network 33 64 }`, "invalid client_network ipv4 bits 33: must be 0-32"},
		{"client_network ipv6 negative", `ratelimit { ` + okZone + ` client_network 24 -1 }`, "invalid client_network ipv6 bits -1: must be 0-128"},
		{"client_network ipv6 too long", `ratelimit { ` + okZone + ` client_network 24 129 }`, "invalid client_network ipv6 bits 129: must be 0-128"},
		{"jitter word", `ratelimit { ` + okZone + ` jitter some }`, "invalid jitter 'some'"},
		{"jitter too large", `ratelimit { ` + okZone + ` jitter 1.5 }`, "invalid jitter 1.5: must be a fraction of the wait, 0-1"},
		{"jitter negative", `ratelimit { ` + okZone + ` jitter -0.1 }`, "invalid jitter -0.1"},
		{"jitter NaN", `ratelimit { ` + okZone + ` jitter NaN }`, "invalid jitter NaN"},
		{"body bad", `ratelimit { ` + okZone + ` body html }`, `invalid body "html": must be problem or none`},
		{"redis without url", `ratelimit { ` + okZone + ` redis }`, "redis block needs 'url' or 'addresses'"},
		{"redis unknown", `ratelimit { ` + okZone + ` redis { url redis://x; bogus } }`, "unrecognized redis subdirective 'bogus'"},
		{"concurrency approximate", `ratelimit { zone c { key k; events 4; algorithm concurrency; approximate 1s } }`, "approximate does not apply to concurrency zones"},
		{"concurrency count_status", `ratelimit { zone c { key k; events 4; algorithm concurrency; count_status 401 } }`, "count_status does not apply to concurrency zones"},
		{"concurrency window", `ratelimit { zone c { key k; events 4; window 1m; algorithm concurrency } }`, "window does not apply to concurrency zones"},
		{"concurrency burst", `ratelimit { zone c { key k; events 4; burst 2; algorithm concurrency } }`, "burst does not apply to concurrency zones"},
		{"concurrency cost", `ratelimit { zone c { key k; events 4; cost 2; algorithm concurrency } }`, "cost does not apply to concurrency zones"},
		{"concurrency dynamic window", `ratelimit { zone c { key k; events 4; window {vars.w}; algorithm concurrency } }`, "window does not apply to concurrency zones"},
		{"concurrency no events", `ratelimit { zone c { key k; algorithm concurrency } }`, "events is required"},
		{"lease_ttl short", `ratelimit { zone c { key k; events 4; algorithm concurrency; lease_ttl 500ms } }`, "invalid lease_ttl 500ms"},
		{"lease_ttl long", `ratelimit { zone c { key k; events 4; algorithm concurrency; lease_ttl 25h } }`, "invalid lease_ttl 25h0m0s"},
		{"lease_ttl zero", `ratelimit { zone c { key k; events 4; algorithm concurrency; lease_ttl 0s } }`, "invalid lease_ttl '0s'"},
		{"lease_ttl no arg", `ratelimit { zone c { key k; events 4; algorithm concurrency; lease_ttl } }`, "wrong argument count"},
		{"lease_ttl on a bucket", `ratelimit { zone api { key k; events 1; window 1s; lease_ttl 1m } }`, "lease_ttl applies to concurrency zones only"},
		{"body_timeout short", `ratelimit { zone c { key k; events 4; algorithm concurrency; body_timeout 500ms } }`, "invalid body_timeout 500ms"},
		{"body_timeout no arg", `ratelimit { zone c { key k; events 4; algorithm concurrency; body_timeout } }`, "wrong argument count"},
		{"body_timeout on a bucket", `ratelimit { zone api { key k; events 1; window 1s; body_timeout 1m } }`, "body_timeout applies to concurrency zones only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.input)
			if err == nil {
				t.Fatalf("UnmarshalCaddyfile(%q) = nil error, want %q", tt.input, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("UnmarshalCaddyfile error = %q, want it to contain %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "Testfile:") {
				t.Errorf("UnmarshalCaddyfile error = %q, want the file and line", err)
			}
		})
	}
}

// TestCaddyfileAdaptGolden adapts a whole Caddyfile and compares the JSON
// with testdata/ratelimit.golden.json (go test -run Golden -update rewrites it).
func TestCaddyfileAdaptGolden(t *testing.T) {
	input := `{
	admin off
}
:8080 {
	route /login {
		ratelimit {
			zone login {
				key {client_ip}
				events 5
				window 15m
				algorithm sliding_log
				count_status 401
			}
			on_error closed
			status 429
		}
		respond 204
	}
	ratelimit /api/* {
		zone per_key {
			key {http.request.header.X-API-Key}
			events 100
			window 1m
			cost {http.request.header.X-Cost}
			match {
				method POST
			}
		}
		zone per_ip {
			key {client_ip}
			events 1000
			window 1h
			algorithm sliding_window
			dry_run
		}
		zone hammering {
			key {http.ratelimit.client_network}
			events 50
			window 1s
			ban 1m after 3
			ban_max 1h
			ban_exempt 100.64.0.0/10 partner-key
		}
		zone tokens {
			key {http.request.header.X-API-Key}
			events 100000
			window 1m
			algorithm fixed_window
			cost_after {http.response.header.X-Tokens-Used} fallback 500
		}
		zone inflight {
			key {http.request.header.X-API-Key}
			events 4
			algorithm concurrency
			lease_ttl 2m
		}
		redis {
			url {env.REDIS_URL}
			key_prefix edge
			min_idle_conns 4
		}
		timeout 20ms
		instances 3
		hash_tag {http.request.header.X-Tenant}
		headers ietf
		log_keys
		client_network 24 56
		jitter 0.25
		body problem
	}
	respond "hello"
}
`
	adapter := caddyconfig.GetAdapter("caddyfile")
	out, warnings, err := adapter.Adapt([]byte(input), nil)
	if err != nil {
		t.Fatalf("Adapt: %v", err)
	}
	if len(warnings) > 0 {
		t.Errorf("Adapt warnings: %v", warnings)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, out, "", "\t"); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	golden := filepath.Join("testdata", "ratelimit.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("adapted JSON differs from %s:\n%s", golden, pretty.String())
	}

	if n := strings.Count(string(out), `"handler":"ratelimit"`); n != 2 {
		t.Errorf("adapted config has %d ratelimit handlers, want 2", n)
	}
}

// TestDirectiveOrder: ratelimit runs before basic_auth without an order option.
func TestDirectiveOrder(t *testing.T) {
	input := `:8080 {
	basic_auth {
		bob $2a$14$Zkx19XLiW6VYouLHR5NmfOFU0z2GTNmpkT/5qqR7hx4IjWJPDhjvG
	}
	ratelimit {
		zone a {
			key {client_ip}
			events 1
			window 1s
		}
	}
	respond ok
}`
	out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(input), nil)
	if err != nil {
		t.Fatalf("Adapt: %v", err)
	}
	s := string(out)
	rl, ba := strings.Index(s, `"handler":"ratelimit"`), strings.Index(s, `"handler":"authentication"`)
	if rl < 0 || ba < 0 || rl > ba {
		t.Errorf("ratelimit at %d, authentication at %d: want ratelimit first in\n%s", rl, ba, s)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExamples adapts each ratelimit example in caddyfile_examples/,
// provisions its handlers against the test Redis (the cluster example
// against the test cluster), and sends a request through each.
func TestExamples(t *testing.T) {
	tests := []struct {
		file    string
		cluster bool
		zones   []string // of each handler, in order
	}{
		{"ratelimit-api.Caddyfile", false, []string{"per_tenant", "per_key,per_ip"}},
		{"ratelimit-login.Caddyfile", false, []string{"per_session", "login"}},
		{"ratelimit-cluster.Caddyfile", true, []string{"per_key,per_tenant"}},
		{"jwt-quota.Caddyfile", false, []string{"per_minute,monthly"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("..", "caddyfile_examples", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt(body, map[string]any{"filename": tt.file})
			if err != nil {
				t.Fatalf("Adapt: %v", err)
			}
			if len(warnings) > 0 {
				t.Errorf("Adapt warnings: %v", warnings)
			}
			var cfg any
			if err := json.Unmarshal(out, &cfg); err != nil {
				t.Fatal(err)
			}
			raws := findHandlers(cfg, "ratelimit")
			if len(raws) != len(tt.zones) {
				t.Fatalf("found %d ratelimit handlers, want %d", len(raws), len(tt.zones))
			}
			t.Setenv("REDIS_URL", testenv.RedisURL(t))
			t.Setenv("REDIS_PASSWORD", "")
			for i, raw := range raws {
				var h Handler
				if err := json.Unmarshal(raw, &h); err != nil {
					t.Fatalf("handler %d: %v", i, err)
				}
				var names []string
				for _, z := range h.Zones {
					names = append(names, z.Name)
				}
				if got := strings.Join(names, ","); got != tt.zones[i] {
					t.Errorf("handler %d zones = %s, want %s", i, got, tt.zones[i])
				}
				if tt.cluster {
					_, prefix := testenv.RedisCluster(t)
					h.Redis.Addresses, h.Redis.KeyPrefix = testenv.RedisClusterAddrs(t), prefix
				} else {
					_, prefix := testenv.Redis(t)
					h.Redis.KeyPrefix = prefix
				}
				h.Timeout = caddy.Duration(5 * time.Second) // -race on shared cores
				if h.JWT != nil {                           // the test JWKS in place of the identity provider's
					h.JWT.JWKSURL, h.JWT.JWKSFile = "", testJWTKeys(t).jwksFile(t)
				}
				provision(t, &h)
				req := get("/v1/items", "X-API-Key", "k", "X-Tenant", "t",
					"Authorization", "Bearer "+testJWTKeys(t).rs256(t, jwtClaims("alice", nil)))
				req.AddCookie(&http.Cookie{Name: "session", Value: "s"})
				res := do(&h, new(statusHandler), req)
				if res.status != http.StatusOK || res.header.Get("RateLimit-Policy") == "" {
					t.Errorf("handler %d: status %d RateLimit-Policy %q, want 200 with headers",
						i, res.status, res.header.Get("RateLimit-Policy"))
				}
			}
		})
	}
}

// findHandlers returns the JSON of every handler named name in an adapted
// config, at any depth (subroutes included).
func findHandlers(v any, name string) []json.RawMessage {
	var out []json.RawMessage
	switch v := v.(type) {
	case map[string]any:
		if v["handler"] == name {
			b, _ := json.Marshal(v)
			return []json.RawMessage{b}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, findHandlers(v[k], name)...)
		}
	case []any:
		for _, e := range v {
			out = append(out, findHandlers(e, name)...)
		}
	}
	return out
}
