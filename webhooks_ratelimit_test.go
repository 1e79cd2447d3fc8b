package edgekit

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/openapitest"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// TestRatelimitWebhooks: with Caddy's events global option routing the
// rate limiter's events to shortener_webhooks, an endpoint subscribed to
// ratelimit.exceeded, ratelimit.ban_set and ratelimit.threshold gets,
// signed, one message for a key's first refusal, one for its ban and one
// for the threshold of a monthly quota it reached, as the OpenAPI
// document's webhooks section describes them; a key that never goes over
// its quota nor reaches a threshold announces nothing.
func TestRatelimitWebhooks(t *testing.T) {
	rs := testenv.StartRedis(t)
	dsn := testenv.Postgres(t)
	admin, port := testenv.FreePort(t), testenv.FreePort(t)
	const apiKey = "ratelimit-hooks-key-0123456789"
	rc := &signedReceiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	tester := newCaddyTester(t, admin)
	tester.InitServer(fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[3]d
	auto_https off
	skip_install_trust
	events {
		on ratelimit_exceeded shortener_webhooks
		on ratelimit_ban_set shortener_webhooks
		on ratelimit_threshold shortener_webhooks
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
			zone monthly {
				key {http.request.header.X-Key}
				events 4
				algorithm fixed_window
				window 1mo calendar tz Europe/Berlin
				notify 50%% 100%%
			}
			redis %[4]s
			timeout 5s # under load the default 10ms fails open: a 200 this test does not expect
		}
		respond "ok"
	}
	route {
		shortener {
			store postgres "%[5]s"
			api /api
			api_key %[6]s
			webhooks {
				allow_private 127.0.0.0/8
			}
		}
	}
}
`, admin, port, testenv.FreePort(t), rs.URL(), dsn, apiKey), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	base := fmt.Sprintf("http://localhost:%d", port)
	req, _ := http.NewRequest("POST", base+"/api/webhooks",
		strings.NewReader(`{"url":"`+srv.URL+`/in","types":["ratelimit.exceeded","ratelimit.ban_set","ratelimit.threshold"]}`))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ep struct{ Secret string }
	err = json.NewDecoder(res.Body).Decode(&ep)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated || err != nil {
		t.Fatalf("create endpoint: %d %v", res.StatusCode, err)
	}
	secret, err := webhook.ParseSecret(ep.Secret)
	if err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	rc.secret = secret
	rc.mu.Unlock()

	var statuses []int
	for _, key := range []string{"alice", "alice", "alice", "alice", "alice", "bob"} {
		req, _ := http.NewRequest("GET", base+"/rl/x", nil)
		req.Header.Set("X-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		statuses = append(statuses, res.StatusCode)
	}
	if want := []int{200, 200, 429, 429, 429, 200}; !slices.Equal(statuses, want) {
		t.Fatalf("statuses %v, want %v", statuses, want)
	}
	for deadline := time.Now().Add(20 * time.Second); len(rc.messages()) < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("messages %v, want three within 20s", rc.messages())
		}
	}
	time.Sleep(500 * time.Millisecond) // nothing more comes
	doc, err := os.ReadFile("shortener/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 || len(rc.raw) != 3 {
		t.Fatalf("messages %q, unverified %v: want three, signed", rc.raw, rc.bad)
	}
	types := map[string]map[string]any{}
	for _, body := range rc.raw {
		var p struct {
			Type string
			Data map[string]any
		}
		_ = json.Unmarshal(body, &p)
		types[p.Type] = p.Data
		t.Logf("%s", body)
		openapitest.CheckWebhookPayload(t, doc, p.Type, body)
	}
	exceeded, ban := types["ratelimit.exceeded"], types["ratelimit.ban_set"]
	if exceeded == nil || ban == nil || exceeded["zone"] != "per_key" || ban["zone"] != "per_key" || ban["ban"] != float64(30) ||
		exceeded["store_key"] != ban["store_key"] || exceeded["key"] != nil {
		t.Errorf("payloads: exceeded %v, ban %v", exceeded, ban)
	}
	// alice's two requests let through, 2 of 4: 50%; bob's one: 25%.
	if th := types["ratelimit.threshold"]; th == nil || th["zone"] != "monthly" || th["threshold"] != float64(50) ||
		th["used"] != float64(2) || th["quota"] != float64(4) || th["key"] != nil {
		t.Errorf("threshold payload %v", th)
	}
}

// signedReceiver keeps the bodies of the messages whose signature verifies
// under its secret.
type signedReceiver struct {
	mu     sync.Mutex
	secret webhook.Secret
	raw    [][]byte
	bad    []string
}

func (rc *signedReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := webhook.Verify(r.Header, body, time.Now(), rc.secret); err != nil {
		rc.bad = append(rc.bad, err.Error())
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	rc.raw = append(rc.raw, body)
}

func (rc *signedReceiver) messages() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, b := range rc.raw {
		out = append(out, string(b))
	}
	return out
}
