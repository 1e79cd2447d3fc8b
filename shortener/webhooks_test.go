package shortener

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// hookReceiver records the signed messages it gets.
type hookReceiver struct {
	mu     sync.Mutex
	secret webhook.Secret
	got    []map[string]any
	raw    [][]byte
	bad    []string
}

func (rc *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := webhook.Verify(r.Header, body, time.Now(), rc.secret); err != nil {
		rc.bad = append(rc.bad, err.Error())
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p map[string]any
	_ = json.Unmarshal(body, &p)
	rc.got = append(rc.got, p)
	rc.raw = append(rc.raw, body)
}

// endpoint makes an endpoint of body through h's API and verifies what
// rc gets with the secret the API shows once; it returns its id.
func (rc *hookReceiver) endpoint(t *testing.T, h *Handler, body string) string {
	t.Helper()
	w := serve(t, h, "POST", "/api/webhooks", body, auth()...)
	if w.Code != http.StatusCreated {
		t.Fatalf("create endpoint: %d %s", w.Code, w.Body)
	}
	var ep struct{ ID, Secret string }
	_ = json.Unmarshal(w.Body.Bytes(), &ep)
	s, err := webhook.ParseSecret(ep.Secret)
	if err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	rc.secret = s
	rc.mu.Unlock()
	return ep.ID
}

func (rc *hookReceiver) types() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, p := range rc.got {
		out = append(out, p["type"].(string))
	}
	return out
}

// TestWebhooksThroughTheHandler: an endpoint made through the API gets
// the link's creation and its click, signed with the secret the API
// showed once, as the API and /stats show them; a read key may not see
// webhooks, and a handler without the block answers 404.
func TestWebhooksThroughTheHandler(t *testing.T) {
	rc := &hookReceiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	h := newHandler(t, embeddedStore(t), func(h *Handler) {
		h.APIReadKeys = []string{testReadKey}
		h.ClicksInterval = caddy.Duration(20 * time.Millisecond)
		h.Webhooks = &WebhooksConfig{AllowPrivate: []string{"127.0.0.0/8"}, Timeout: caddy.Duration(2 * time.Second)}
		h.DenyHosts = []string{"evil.example"}
	})
	// Refusals the document states by example (the harness checks each).
	for _, body := range []string{`{"url":"http://10.1.2.3/in","types":["click"]}`, `{"url":"https://evil.example/in","types":["click"]}`} {
		if w := serve(t, h, "POST", "/api/webhooks", body, auth()...); w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", body, w.Code, w.Body)
		}
	}
	id := rc.endpoint(t, h, `{"url":"`+srv.URL+`/in","types":["link.created","click"]}`)
	if r := serve(t, h, "POST", "/api/webhooks/"+id+"/replay", `{"since":"yesterday"}`, auth()...); r.Code != http.StatusBadRequest {
		t.Errorf("replay since yesterday: %d", r.Code)
	}
	if r := serve(t, h, "GET", "/api/webhooks", "", "Authorization", "Bearer "+testReadKey); r.Code != http.StatusForbidden {
		t.Errorf("a read key listed webhooks: %d", r.Code)
	}
	l := create(t, h, `{"long_url":"https://example.com/hooked","code":"hooked"}`)
	serve(t, h, "GET", "/hooked", "", "User-Agent", firefoxUA)
	eventually(t, 20*time.Second, "the link's creation and its click arrive", func() bool {
		got := rc.types()
		slices.Sort(got)
		return strings.Join(got, ",") == "click,link.created"
	})
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Errorf("unverified messages: %v", rc.bad)
	}
	data := map[string]map[string]any{} // by type: they may arrive in either order
	for _, p := range rc.got {
		data[p["type"].(string)] = p["data"].(map[string]any)
	}
	created, click := data["link.created"], data["click"]
	for i, p := range rc.got {
		checkWebhookPayload(t, p["type"].(string), rc.raw[i])
	}
	if created["code"] != l.Code || created["long_url"] != "https://example.com/hooked" || created["short_url"] != "/hooked" {
		t.Errorf("link.created data: %v", created)
	}
	if click["code"] != "hooked" || click["device"] != "desktop" || click["browser"] != "firefox" || click["bot"] != false {
		t.Errorf("click data: %v", click)
	}
	if n := sample(h.hookStats.attempts.WithLabelValues("delivered")); n != 2 {
		t.Errorf("delivered attempts counted: %v, want 2", n)
	}
	off := newHandler(t, embeddedStore(t), nil)
	if r := serve(t, off, "GET", "/api/webhooks", "", auth()...); r.Code != http.StatusNotFound {
		t.Errorf("webhooks off: %d", r.Code)
	}
}

// TestWebhookClicksByTag: an endpoint filtering by tag gets the clicks of
// the links that carry it and not the others' (a click names only its
// code: the dispatcher asks the handler for the link's tags).
func TestWebhookClicksByTag(t *testing.T) {
	rc := &hookReceiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	h := newHandler(t, embeddedStore(t), func(h *Handler) {
		h.ClicksInterval = caddy.Duration(20 * time.Millisecond)
		h.Webhooks = &WebhooksConfig{AllowPrivate: []string{"127.0.0.0/8"}, Timeout: caddy.Duration(2 * time.Second)}
	})
	rc.endpoint(t, h, `{"url":"`+srv.URL+`/in","types":["click"],"tags":["print"]}`)
	create(t, h, `{"long_url":"https://example.com/p","code":"printed","tags":["print","q4"]}`)
	create(t, h, `{"long_url":"https://example.com/w","code":"webonly","tags":["web"]}`)
	for range 3 {
		serve(t, h, "GET", "/webonly", "", "User-Agent", firefoxUA)
	}
	serve(t, h, "GET", "/printed", "", "User-Agent", firefoxUA)
	eventually(t, 20*time.Second, "the tagged link's click arrives", func() bool { return len(rc.types()) >= 1 })
	time.Sleep(300 * time.Millisecond) // time for a wrong one to follow
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != 1 || len(rc.bad) > 0 {
		t.Fatalf("got %d messages (%d unverified), want the one click of printed", len(rc.got), len(rc.bad))
	}
	if code := rc.got[0]["data"].(map[string]any)["code"]; code != "printed" {
		t.Errorf("a click of %v passed the tag filter", code)
	}
}

// TestWebhookMetricsObserve: the backlog gauges read ages against now,
// zero for nothing waiting.
func TestWebhookMetricsObserve(t *testing.T) {
	m, err := newWebhookMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	m.observe(webhook.Backlog{Pending: 3, OldestPending: now.Add(-90 * time.Second), Events: 40, OldestEvent: now.Add(-time.Hour)}, now)
	for g, want := range map[string]float64{"pending": 3, "pendingAge": 90, "events": 40, "eventsAge": 3600} {
		got := map[string]float64{"pending": sample(m.pending), "pendingAge": sample(m.pendingAge),
			"events": sample(m.events), "eventsAge": sample(m.eventsAge)}[g]
		if got != want {
			t.Errorf("%s = %v, want %v", g, got, want)
		}
	}
	m.observe(webhook.Backlog{}, now)
	if sample(m.pendingAge) != 0 || sample(m.eventsAge) != 0 {
		t.Error("ages of nothing are not 0")
	}
}

// sample is a counter's or gauge's value.
func sample(c prometheus.Metric) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}
