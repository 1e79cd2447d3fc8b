package edgekit

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"go.yaml.in/yaml/v3"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestOperationsMetricNames: every metric the Grafana dashboard and the
// alert rules query is one a running Caddy with both modules exports, so
// renaming a metric fails here and not on the pager. Caddy runs with the
// ratelimit (Redis), the shortener (embedded store, Redis for its click
// stream, a GeoIP file, webhooks, the certificate permission on an
// on-demand TLS site) and the metrics option; the requests give every
// vector its children (a ban, a delivered webhook, a certificate refused)
// before /metrics on the admin endpoint is scraped. Two series exist
// before any request moves them, so they are checked as registered: the
// breaker gauge (0 with every breaker closed: opening one takes a failing
// Redis, which the breaker's own tests provide) and the click stream's
// length (sampled by the consumer from its start).
func TestOperationsMetricNames(t *testing.T) {
	queries := operationsQueries(t)
	used := usedMetrics(queries)
	if len(used) < 20 {
		t.Fatalf("%d metric names in the dashboard and the rules: the files were not read", len(used))
	}
	admin, base, tlsAddr := startOperationsCaddy(t)
	exerciseBothModules(t, base)
	askCertificate(t, tlsAddr)
	var families map[string]*dto.MetricFamily
	var missing []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		families = scrapeMetrics(t, admin)
		if missing = checkQueries(queries, families); len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, m := range missing {
		t.Errorf("not exported by a running Caddy: %s", m)
	}
	checkExercised(t, families)
	t.Logf("%d metric names in %d queries checked against %d scraped families", len(used), len(queries), len(families))

	t.Run("renamed", func(t *testing.T) {
		for _, rename := range []struct{ from, to, name, want string }{
			{"caddy_shortener_redirects_total", "caddy_shortener_redirect_total", "caddy_shortener_redirect_total", ""},
			{"caddy_ratelimit_decisions_total", "caddy_ratelimit_decision_total", "caddy_ratelimit_decision_total", ""},
			{"caddy_ratelimit_store_duration_seconds_bucket", "caddy_ratelimit_store_duration_seconds", "caddy_ratelimit_store_duration_seconds", ""},
			{"caddy_shortener_webhook_events_lost_total", "caddy_shortener_webhook_events_lost", "caddy_shortener_webhook_events_lost", ""},
			{"sum by (source)", "sum by (tier)", "tier", "label tier of caddy_shortener_redirects_total (in "},
			{`outcome=~"fail_closed|fallback"`, `result=~"fail_closed|fallback"`, "result", "label result of caddy_ratelimit_decisions_total (in "},
		} {
			renamed := map[string]string{}
			for q, where := range queries {
				renamed[strings.ReplaceAll(q, rename.from, rename.to)] = where
			}
			if rename.want == "" { // a metric
				rename.want = rename.name + " (in "
			}
			got := slices.DeleteFunc(checkQueries(renamed, families), func(m string) bool { return slices.Contains(missing, m) })
			if !slices.ContainsFunc(got, func(m string) bool { return strings.HasPrefix(m, rename.want) }) ||
				slices.ContainsFunc(got, func(m string) bool { return !strings.Contains(m, rename.name) }) {
				t.Errorf("%s renamed %s: reported %q, want %s... and only lines naming %s", rename.from, rename.to, got, rename.want, rename.name)
			}
		}
	})
}

// startOperationsCaddy loads a Caddyfile with both modules into a real
// Caddy and returns its admin port, the site's base URL and the address of
// its on-demand TLS site.
func startOperationsCaddy(t *testing.T) (admin int, base, tlsAddr string) {
	t.Helper()
	_, prefix := testenv.Redis(t)
	admin, port, tlsPort := testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)
	geoip := filepath.Join(t.TempDir(), "geo.mmdb")
	writeOperationsGeoIP(t, geoip)
	tester := newCaddyTester(t, admin)
	tester.InitServer(fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[3]d
	skip_install_trust
	storage file_system %[8]q
	metrics
	events {
		on ratelimit_exceeded shortener_webhooks
		on ratelimit_ban_set shortener_webhooks
	}
	on_demand_tls {
		permission shortener
	}
}

http://localhost:%[2]d {
	route /rl/* {
		ratelimit {
			zone per_key {
				key {http.request.header.X-Key}
				events 2
				window 1m
				ban 30s after 2
			}
			redis {
				url %[4]s
				key_prefix %[5]s
			}
		}
		respond "ok"
	}
	route {
		shortener {
			store embedded "%[6]s"
			api /api
			api_key %[7]s
			redis {
				url %[4]s
				key_prefix %[5]s-shortener
			}
			clicks_geoip %[9]q
			webhooks {
				allow_private 127.0.0.0/8
			}
		}
	}
}

https:// {
	tls internal {
		on_demand
	}
	respond "tls"
}
`, admin, port, tlsPort, testenv.RedisURL(t), prefix,
		filepath.Join(t.TempDir(), "links.db"), operationsAPIKey, t.TempDir(), geoip), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return admin, fmt.Sprintf("http://localhost:%d", port), fmt.Sprintf("127.0.0.1:%d", tlsPort)
}

// writeOperationsGeoIP writes a GeoIP file (a Country database with one
// network) for clicks_geoip.
func writeOperationsGeoIP(t *testing.T, path string) {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-Country", IncludeReservedNetworks: true, RecordSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	_, network, _ := net.ParseCIDR("198.51.100.0/24")
	if err := tree.Insert(network, mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String("NZ")}}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
}

// askCertificate makes the on-demand TLS site ask the certificate
// permission about a name that is no link domain: the handshake fails.
func askCertificate(t *testing.T, addr string) {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr,
		&tls.Config{ServerName: "unknown.example.test", InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
	if err == nil {
		conn.Close()
		t.Errorf("unknown.example.test: handshake succeeded, want it refused by the certificate permission")
	}
}

const operationsAPIKey = "operations-test-key-0123456789"

// exerciseBothModules sends what gives the metrics their children: a
// key refused and banned, a webhook endpoint that gets a link.created
// message, the link's redirects, an unknown code and a refused API write.
func exerciseBothModules(t *testing.T, base string) {
	t.Helper()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	do := func(method, path, body string, header ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	auth := []string{"Authorization", "Bearer " + operationsAPIKey}
	if st, body := do("POST", "/api/webhooks", `{"url":"`+hook.URL+`/in","types":["link.created"]}`, auth...); st != http.StatusCreated {
		t.Fatalf("create webhook endpoint: %d %s", st, body)
	}
	if st, body := do("POST", "/api/links", `{"long_url":"https://example.com/ops","code":"ops-metrics"}`, auth...); st != http.StatusCreated {
		t.Fatalf("create link: %d %s", st, body)
	}
	for range 2 {
		if st, _ := do("GET", "/ops-metrics", ""); st/100 != 3 {
			t.Errorf("GET /ops-metrics: %d, want a redirect", st)
		}
	}
	if st, _ := do("GET", "/no-such-code", ""); st != http.StatusNotFound {
		t.Errorf("GET /no-such-code: %d, want 404", st)
	}
	if st, _ := do("POST", "/api/links", `{"long_url":"not a url"}`, auth...); st/100 != 4 {
		t.Errorf("POST /api/links with a bad URL: %d, want 4xx", st)
	}
	var statuses []int
	for range 4 {
		st, _ := do("GET", "/rl/x", "", "X-Key", "alice")
		statuses = append(statuses, st)
	}
	if statuses[0] != 200 || statuses[3] != 429 {
		t.Errorf("rate limited statuses %v, want 200 first and 429 last", statuses)
	}
}

// checkExercised checks the requests moved what they were sent for: the
// certificate permission said no, the GeoIP file's build time is read.
func checkExercised(t *testing.T, families map[string]*dto.MetricFamily) {
	t.Helper()
	for _, m := range families["caddy_shortener_tls_permission_total"].GetMetric() {
		if l := m.GetLabel(); len(l) == 1 && l[0].GetValue() == "no" && m.GetCounter().GetValue() < 1 {
			t.Errorf("caddy_shortener_tls_permission_total{answer=\"no\"} = %v after a refused handshake, want 1", m.GetCounter().GetValue())
		}
	}
	if g := families["caddy_shortener_geoip_build_timestamp_seconds"].GetMetric(); len(g) != 1 || g[0].GetGauge().GetValue() < 1.7e9 {
		t.Errorf("caddy_shortener_geoip_build_timestamp_seconds = %v, want the file's build time", g)
	}
}

// scrapeMetrics reads the admin endpoint's /metrics, in whatever format
// it answers.
func scrapeMetrics(t *testing.T, admin int) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(fmt.Sprintf("http://localhost:%d/metrics", admin))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", res.Status)
	}
	families := map[string]*dto.MetricFamily{}
	dec := expfmt.NewDecoder(res.Body, expfmt.ResponseFormat(res.Header))
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); errors.Is(err, io.EOF) {
			return families
		} else if err != nil {
			t.Fatalf("parsing /metrics: %v", err)
		}
		families[mf.GetName()] = mf
	}
}

// TestDocsAlertRunbooks: every alert has a summary, a description and a
// runbook_url whose anchor is a heading of docs/operations.md.
func TestDocsAlertRunbooks(t *testing.T) {
	const prefix = "https://github.com/edgekit/caddy-edgekit/blob/main/docs/operations.md#"
	anchors, err := headingAnchors("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range readAlertRules(t).Groups {
		for _, r := range g.Rules {
			n++
			a := r.Annotations
			if a["summary"] == "" || a["description"] == "" {
				t.Errorf("alert %s: summary %q, description %q: want both", r.Alert, a["summary"], a["description"])
			}
			anchor, ok := strings.CutPrefix(a["runbook_url"], prefix)
			if !ok || !anchors[anchor] {
				t.Errorf("alert %s: runbook_url %q is not %s<a heading of docs/operations.md>", r.Alert, a["runbook_url"], prefix)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s has no alert", alertRulesFile)
	}
}

// TestDocsDashboardPanels: docs/operations.md lists every panel of the
// dashboard with its queries, as they are in the JSON.
func TestDocsDashboardPanels(t *testing.T) {
	doc, err := os.ReadFile("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for q, where := range dashboardQueries(t) {
		title, ok := strings.CutPrefix(where, "panel ")
		if ok && !strings.Contains(string(doc), "**"+strings.Trim(title, `"`)+"**") {
			t.Errorf("docs/operations.md does not name %s", where)
		}
		if ok && !strings.Contains(string(doc), q) {
			t.Errorf("docs/operations.md does not show the query of %s: %s", where, q)
		}
	}
}

// TestAlertRulesTested: the promtool unit tests have, for every alert, a
// case where it fires and one where it stays silent.
func TestAlertRulesTested(t *testing.T) {
	b, err := os.ReadFile("deploy/prometheus/edgekit-alerts.test.yml")
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string
				ExpAlerts []any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		}
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatal(err)
	}
	firing, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			firing[a.Alertname] = firing[a.Alertname] || len(a.ExpAlerts) > 0
			silent[a.Alertname] = silent[a.Alertname] || len(a.ExpAlerts) == 0
		}
	}
	for _, g := range readAlertRules(t).Groups {
		for _, r := range g.Rules {
			if !firing[r.Alert] || !silent[r.Alert] {
				t.Errorf("alert %s: a firing case %v, a silent case %v: want both", r.Alert, firing[r.Alert], silent[r.Alert])
			}
		}
	}
}
