package ratelimit

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

func TestAdminModuleRegistered(t *testing.T) {
	info, err := caddy.GetModule("admin.api.ratelimit")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.New().(caddy.AdminRouter); !ok {
		t.Errorf("admin.api.ratelimit is not an AdminRouter")
	}
}

// TestPlansExampleE2E runs caddyfile_examples/ratelimit-plans.Caddyfile in
// a real Caddy (its site on a free port, Redis under a test prefix, the
// plans table in a fresh schema) and drives the admin API through Caddy's
// admin endpoint: map-assigned quotas on /v1, PostgreSQL plans on /v2,
// inspect, reset, brake, and JSON errors.
func TestPlansExampleE2E(t *testing.T) {
	_, prefix := testenv.Redis(t)
	dsn := testenv.Postgres(t)
	exec := plansDB(t, dsn)
	exec(`ALTER TABLE ratelimit_plans RENAME TO api_plans`)
	exec(`INSERT INTO api_plans VALUES ('pro', 3, 3600, NULL)`)
	t.Setenv("REDIS_URL", testenv.RedisURL(t))
	t.Setenv("PLANS_DSN", dsn)

	example, err := os.ReadFile(filepath.Join("..", "caddyfile_examples", "ratelimit-plans.Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	site := string(example)
	for old, repl := range map[string]string{
		"api.example.com {":            "http://localhost:$PORT {",
		"redis {env.REDIS_URL}":        "redis {\n\t\t\turl {env.REDIS_URL}\n\t\t\tkey_prefix " + prefix + "\n\t\t}\n\t\ttimeout 2s",
		"reverse_proxy localhost:9000": `respond "ok"`,
		"\t\t\t\trefresh 30s\n":        "\t\t\t\trefresh 200ms\n",
	} {
		if !strings.Contains(site, old) {
			t.Fatalf("the example no longer has %q", old)
		}
		site = strings.ReplaceAll(site, old, repl)
	}
	tester, port, admin := startCaddyAdmin(t, "", site)
	base := fmt.Sprintf("http://localhost:%d", port)
	call := func(method, url, apiKey, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		if apiKey != "" {
			req.Header.Set("X-API-Key", apiKey)
		}
		res, err := tester.Client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	q := func(res *http.Response) string {
		_, after, _ := strings.Cut(res.Header.Get("RateLimit-Policy"), ";q=")
		v, _, _ := strings.Cut(after, ";")
		return v
	}

	// /v1: the map sets the quota per key.
	for key, want := range map[string]string{"test_1": "10", "ent_1": "10000", "anything": "60"} {
		if res, _ := call("GET", base+"/v1/x", key, ""); res.StatusCode != 200 || q(res) != want {
			t.Errorf("/v1 key %s: %d q=%s, want 200 q=%s", key, res.StatusCode, q(res), want)
		}
	}
	// /v2: plans from PostgreSQL; a plan not in the table gets the zone's 60.
	if res, _ := call("GET", base+"/v2/x", "pro_1", ""); q(res) != "3" {
		t.Errorf("/v2 pro: q=%s, want 3 from the table", q(res))
	}
	if res, _ := call("GET", base+"/v2/x", "ent_1", ""); q(res) != "60" {
		t.Errorf("/v2 enterprise (not in the table): q=%s, want 60", q(res))
	}

	adminURL := fmt.Sprintf("http://localhost:%d/ratelimit", admin)
	res, body := call("GET", adminURL+"/zones", "", "")
	var zones []zoneInfo
	if res.StatusCode != 200 || json.Unmarshal([]byte(body), &zones) != nil {
		t.Fatalf("GET zones: %d %s", res.StatusCode, body)
	}
	var v2 *zoneInfo
	for i := range zones {
		if zones[i].Plans != nil {
			v2 = &zones[i]
		}
	}
	if v2 == nil || v2.Plans.Table != "api_plans" || v2.Plans.Plans != 1 || v2.Plans.PlanKey != "{plan}" ||
		strings.Contains(body, "sslmode") {
		t.Errorf("GET zones = %s, want the /v2 zone with its plans (DSN redacted)", body)
	}

	// Inspect the /v2 key pro_1 (plan pro, 1 of 3 used), reset it.
	inspect := fmt.Sprintf("%s/zones/per_key/keys/pro_1?handler=%d&plan=pro", adminURL, v2.Handler)
	res, body = call("GET", inspect, "", "")
	var states []keyState
	if res.StatusCode != 200 || json.Unmarshal([]byte(body), &states) != nil || len(states) != 1 ||
		states[0].Remaining != 2 || states[0].Quota != "plan" {
		t.Fatalf("GET %s: %d %s, want 2 of the plan's 3 left", inspect, res.StatusCode, body)
	}
	if res, body := call("DELETE", inspect, "", ""); res.StatusCode != 200 {
		t.Fatalf("DELETE key: %d %s", res.StatusCode, body)
	}
	if _, body = call("GET", inspect, "", ""); !strings.Contains(body, `"remaining":3`) {
		t.Errorf("after reset: %s, want 3 left", body)
	}

	// The brake cuts /v2's fallback quota of 60 to 6.
	if res, body := call("PUT", adminURL+"/brake", "", `{"factor": 0.1, "ttl": "1m"}`); res.StatusCode != 200 {
		t.Fatalf("PUT brake: %d %s", res.StatusCode, body)
	}
	if res, _ := call("GET", base+"/v2/x", "other", ""); q(res) != "6" {
		t.Errorf("under the brake: q=%s, want 6", q(res))
	}
	if res, body := call("DELETE", adminURL+"/brake", "", ""); res.StatusCode != 200 {
		t.Fatalf("DELETE brake: %d %s", res.StatusCode, body)
	}
	if res, _ := call("GET", base+"/v2/x", "other", ""); q(res) != "60" {
		t.Errorf("after the brake: q=%s, want 60", q(res))
	}

	// Errors are JSON.
	for _, tt := range []struct {
		method, url, body string
		status            int
	}{
		{"PUT", adminURL + "/brake", `{"factor": 2}`, http.StatusBadRequest},
		{"PUT", adminURL + "/brake", `{"factor": 0.5, "factor": 1}`, http.StatusBadRequest},
		{"PUT", adminURL + "/brake", `{"factor": 0.5} x`, http.StatusBadRequest},
		{"GET", adminURL + "/zones/missing/keys/k", "", http.StatusNotFound},
	} {
		res, body := call(tt.method, tt.url, "", tt.body)
		var e struct{ Error string }
		if res.StatusCode != tt.status || json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
			t.Errorf("%s %s: %d %s, want %d with a JSON error", tt.method, tt.url, res.StatusCode, body, tt.status)
		}
	}
}
