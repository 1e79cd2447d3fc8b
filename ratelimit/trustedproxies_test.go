package ratelimit

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// provisionedServer is an HTTP server as Caddy's http app provisions it
// (its trusted_proxies source loaded), with trusted proxies or not, in
// strict mode or not, and the context its routes are provisioned in.
// Nothing is started (no listener), so there is nothing to stop.
func provisionedServer(t *testing.T, trusted bool, strict int) caddy.Context {
	t.Helper()
	srv := map[string]any{"listen": []string{"127.0.0.1:0"}, "trusted_proxies_strict": strict}
	if trusted {
		srv["trusted_proxies"] = map[string]any{"source": "static", "ranges": []string{"10.0.0.0/8"}}
	}
	raw, err := json.Marshal(map[string]any{"servers": map[string]any{"srv0": srv}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := caddy.ProvisionContext(&caddy.Config{AppsRaw: caddy.ModuleMap{"http": raw}})
	if err != nil {
		t.Fatalf("provisioning the http app: %v", err)
	}
	app, err := ctx.App("http")
	if err != nil {
		t.Fatalf("loading the http app: %v", err)
	}
	return ctx.WithValue(caddyhttp.ServerCtxKey, app.(*caddyhttp.App).Servers["srv0"])
}

// TestWarnTrustedProxiesNotStrict: a handler whose zones key on the client
// address, on a server that trusts proxies without trusted_proxies_strict,
// logs one warning at load naming those zones; strict mode, no trusted
// proxies, or no zone reading the client address: none.
func TestWarnTrustedProxiesNotStrict(t *testing.T) {
	perIP := func() *Zone {
		return &Zone{Name: "per_ip", Key: "{http.vars.client_ip}", Events: 10, Window: caddy.Duration(time.Second)}
	}
	cases := []struct {
		name    string
		trusted bool
		strict  int
		zones   func() []*Zone
		network bool
		want    []string // the zones named; nil: no warning
	}{
		{"client_ip loose", true, 0, func() []*Zone { return []*Zone{perIP(), zone("per_key", 10, time.Second)} }, false, []string{"per_ip"}},
		{"client_ip shorthand", true, 0, func() []*Zone {
			return []*Zone{{Name: "a", Key: "ip:{client_ip}", Events: 1, Window: caddy.Duration(time.Second)}}
		}, false, []string{"a"}},
		{"client_network loose", true, 0, func() []*Zone {
			return []*Zone{{Name: "net", Key: "{http.ratelimit.client_network}", Events: 1, Window: caddy.Duration(time.Second)}}
		}, true, []string{"net"}},
		{"ban_exempt network loose", true, 0, func() []*Zone {
			z := zone("keyed", 1, time.Second)
			z.Ban, z.BanExempt = caddy.Duration(time.Minute), []string{"100.64.0.0/10"}
			return []*Zone{z}
		}, false, []string{"keyed"}},
		{"strict", true, 1, func() []*Zone { return []*Zone{perIP()} }, false, nil},
		{"no trusted proxies", false, 0, func() []*Zone { return []*Zone{perIP()} }, false, nil},
		{"no zone on the address", true, 0, func() []*Zone { return []*Zone{zone("per_key", 10, time.Second)} }, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := provisionedServer(t, tc.trusted, tc.strict)
			core, logs := observer.New(zap.WarnLevel)
			h := &Handler{Zones: tc.zones(), logger: zap.New(core)}
			if err := h.Provision(ctx); err != nil {
				t.Fatalf("Provision: %v", err)
			}
			t.Cleanup(func() { _ = h.Cleanup() })
			warned := logs.FilterMessageSnippet("trusted_proxies_strict").All()
			if tc.want == nil {
				if len(warned) != 0 {
					t.Fatalf("warnings = %v, want none", warned)
				}
				return
			}
			if len(warned) != 1 {
				t.Fatalf("got %d warnings, want 1: %v", len(warned), logs.All())
			}
			got, _ := json.Marshal(warned[0].ContextMap()["zones"])
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) {
				t.Errorf("zones named = %s, want %s", got, want)
			}
			if srv := warned[0].ContextMap()["server"]; srv != "srv0" {
				t.Errorf("server = %v, want srv0", srv)
			}
		})
	}
}
