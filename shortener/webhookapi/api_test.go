package webhookapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
	"github.com/edgekit/caddy-edgekit/shortener/webhookapi"
)

type fixture struct {
	t     testing.TB
	api   *webhookapi.API
	store *store.EmbeddedStore
	url   string // a receiver the client may reach
}

func newFixture(t testing.TB, allowLoopback bool) *fixture {
	s, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Events = true
	c := &webhook.Client{Timeout: 2 * time.Second}
	if allowLoopback {
		c.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	return &fixture{t: t, store: s, url: srv.URL + "/hook",
		api: &webhookapi.API{Store: s, Log: s, Client: c, CheckURL: func(u string) (string, error) {
			if strings.Contains(u, "denied.example") {
				return "", fmt.Errorf("the host denied.example is denied")
			}
			return u, nil
		}}}
}

// do sends one request through Serve, as the handler mounts it, and
// returns the status and the JSON answer (the error's JSON for an error).
func (f *fixture) do(method, path, body string, write bool) (int, map[string]any, http.Header) {
	f.t.Helper()
	r := httptest.NewRequest(method, "http://sho.rt/api"+path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	rest, _, _ := strings.Cut(path, "?")
	if err := f.api.Serve(w, r, rest, write); err != nil {
		var e interface{ HTTPStatus() int }
		if !asStatus(err, &e) {
			f.t.Fatalf("%s %s: %v", method, path, err)
		}
		return e.HTTPStatus(), map[string]any{"error": err.Error()}, w.Header()
	}
	var out map[string]any
	if w.Body.Len() > 0 {
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			f.t.Fatalf("%s %s: %s", method, path, w.Body)
		}
	}
	return w.Code, out, w.Header()
}

func asStatus(err error, target *interface{ HTTPStatus() int }) bool {
	e, ok := err.(interface{ HTTPStatus() int })
	if ok {
		*target = e
	}
	return ok
}

// TestEndpointLifecycle: create (the secret shown once), read, list,
// edit, rotate, delete; a read-only key reads only.
func TestEndpointLifecycle(t *testing.T) {
	f := newFixture(t, true)
	st, ep, hdr := f.do("POST", "/webhooks", fmt.Sprintf(`{"url":%q,"types":["link.created","click"],"tags":["print"],"batch":10,"batch_wait_ms":2000}`, f.url), true)
	if st != 201 || !strings.HasPrefix(ep["secret"].(string), "whsec_") || hdr.Get("Location") != "webhooks/"+ep["id"].(string) {
		t.Fatalf("create: %d %v %v", st, ep, hdr)
	}
	id := ep["id"].(string)
	if _, err := webhook.ParseSecret(ep["secret"].(string)); err != nil {
		t.Errorf("the secret: %v", err)
	}
	st, got, _ := f.do("GET", "/webhooks/"+id, "", false)
	if st != 200 || got["secret"] != nil || got["url"] != f.url || fmt.Sprint(got["types"]) != "[link.created click]" || got["batch_wait_ms"] != 2000.0 {
		t.Errorf("read: %d %v", st, got)
	}
	if st, list, _ := f.do("GET", "/webhooks", "", false); st != 200 || len(list["endpoints"].([]any)) != 1 {
		t.Errorf("list: %d %v", st, list)
	}
	if st, _, _ := f.do("POST", "/webhooks", `{}`, false); st != 403 {
		t.Errorf("a read-only key created: %d", st)
	}
	st, got, _ = f.do("PATCH", "/webhooks/"+id, `{"tags":null,"disabled":true,"types":["link.revoked"]}`, true)
	if st != 200 || got["disabled"] != true || got["disabled_reason"] != "disabled through the API" || len(got["tags"].([]any)) != 0 || got["version"] != 2.0 {
		t.Errorf("patch: %d %v", st, got)
	}
	st, got, _ = f.do("PATCH", "/webhooks/"+id, `{"disabled":false}`, true)
	if st != 200 || got["disabled_reason"] != nil {
		t.Errorf("enable: %d %v", st, got)
	}
	st, rot, _ := f.do("POST", "/webhooks/"+id+"/rotate", `{"grace_seconds":3600}`, true)
	keys, _ := rot["keys"].([]any)
	if st != 200 || rot["secret"] == ep["secret"] || len(keys) != 2 || keys[0].(map[string]any)["until"] != nil || keys[1].(map[string]any)["until"] == nil {
		t.Errorf("rotate: %d %v", st, rot)
	}
	e, _ := f.store.Endpoint(t.Context(), id)
	if len(e.Signing(time.Now())) != 2 || e.Keys[0].Secret.Encode() != rot["secret"] {
		t.Errorf("stored keys after rotation: %d signing", len(e.Signing(time.Now())))
	}
	if st, _, _ := f.do("DELETE", "/webhooks/"+id, "", true); st != 204 {
		t.Errorf("delete: %d", st)
	}
	for _, p := range []string{"/webhooks/" + id, "/webhooks/ep_nope", "/webhooks/" + id + "/messages"} {
		if st, _, _ := f.do("GET", p, "", false); st != 404 {
			t.Errorf("GET %s after delete: %d", p, st)
		}
	}
	if st, _, hdr := f.do("PUT", "/webhooks", "", true); st != 405 || hdr.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("PUT: %d %v", st, hdr)
	}
}

// TestEndpointRefusals: each bad field is a 400 naming it, and nothing is
// stored; a private target is refused unless allowed.
func TestEndpointRefusals(t *testing.T) {
	f := newFixture(t, true)
	u := fmt.Sprintf("%q", f.url)
	for _, tc := range []struct{ body, field string }{
		{`{"types":["click"]}`, "url: required"},
		{`{"url":"https://denied.example/x","types":["click"]}`, "url: the host denied.example is denied"},
		{`{"url":"ftp://hooks.example/","types":["click"]}`, "url:"},
		{`{"url":` + u + `}`, "types: at least one"},
		{`{"url":` + u + `,"types":["click","clicks"]}`, `types[1]: "clicks" is not an event type`},
		{`{"url":` + u + `,"types":["click","click"]}`, "types[1]: \"click\" is given twice"},
		{`{"url":` + u + `,"types":["click"],"tags":["ok","no spaces"]}`, "tags[1]:"},
		{`{"url":` + u + `,"types":["click"],"codes":["ok1","bad/code"]}`, "codes[1]: not a code"},
		{`{"url":` + u + `,"types":["click"],"batch":1001}`, "batch: 1001 is not 0 to 1000"},
		{`{"url":` + u + `,"types":["click"],"batch_wait_ms":60001}`, "batch_wait_ms: 60001"},
		{`{"url":` + u + `,"types":["click"],"secret":"whsec_x"}`, "invalid JSON"},
		{`{"url":` + u + `,"types":["click"],"url":"x"}`, "invalid JSON"},
		{`{"url":` + u + `,"types":["click"],"description":"a\u0000b"}`, "description"},
	} {
		st, got, _ := f.do("POST", "/webhooks", tc.body, true)
		if st != 400 || !strings.Contains(fmt.Sprint(got["error"]), tc.field) {
			t.Errorf("%s: %d %v, want 400 naming %q", tc.body, st, got, tc.field)
		}
	}
	if eps, _ := f.store.Endpoints(t.Context()); len(eps) != 0 {
		t.Errorf("%d endpoints stored by refused requests", len(eps))
	}
	private := newFixture(t, false)
	st, got, _ := private.do("POST", "/webhooks", `{"url":`+u+`,"types":["click"]}`, true)
	if st != 400 || !strings.Contains(fmt.Sprint(got["error"]), "no address the handler may reach") {
		t.Errorf("a loopback target: %d %v", st, got)
	}
	st, _, _ = f.do("POST", "/webhooks", `{"url":`+u+`,"types":["click"],"description":"`+strings.Repeat("x", webhookapi.MaxBody)+`"}`, true)
	if st != 413 {
		t.Errorf("an over-long body: %d", st)
	}
	st, created, _ := f.do("POST", "/webhooks", `{"url":`+u+`,"types":["click"]}`, true)
	if st != 201 {
		t.Fatal(st)
	}
	id := created["id"].(string)
	for body, field := range map[string]string{`{"types":[]}`: "types", `{"url":null}`: "url: may not be null", `{"secret":"x"}`: "secret: not a field",
		`{"batch":-1}`: "batch:", `[1]`: "JSON object"} {
		if st, got, _ := f.do("PATCH", "/webhooks/"+id, body, true); st != 400 || !strings.Contains(fmt.Sprint(got["error"]), field) {
			t.Errorf("PATCH %s: %d %v", body, st, got)
		}
	}
	if e, _ := f.store.Endpoint(t.Context(), id); e.Version != 1 {
		t.Errorf("refused patches changed the endpoint: version %d", e.Version)
	}
	if st, got, _ := f.do("POST", "/webhooks/"+id+"/rotate", `{"grace_seconds":604801}`, true); st != 400 || !strings.Contains(fmt.Sprint(got["error"]), "grace_seconds") {
		t.Errorf("rotate with a long grace: %d %v", st, got)
	}
}

// TestMessagesAPI: a listing pages newest first, a message shows its body
// and attempts, and replays make messages pending again.
func TestMessagesAPI(t *testing.T) {
	f := newFixture(t, true)
	_, created, _ := f.do("POST", "/webhooks", fmt.Sprintf(`{"url":%q,"types":["link.created"]}`, f.url), true)
	id := created["id"].(string)
	ctx := t.Context()
	if _, _, ok, err := f.store.Lease(ctx, id, "test", time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	now := time.Now()
	var msgs []webhook.Message
	for i := range 3 {
		msgs = append(msgs, webhook.Message{ID: webhook.NewID(now.Add(time.Duration(i) * time.Millisecond)), Type: webhook.TypeLinkCreated,
			At: now, Body: []byte(fmt.Sprintf(`{"n":%d}`, i)), Events: 1, NextAt: now})
	}
	if err := f.store.Enqueue(ctx, id, "test", msgs, link.EventCursor{}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Settle(ctx, id, "test", []webhook.Result{{Attempt: webhook.AttemptLog{Message: msgs[0].ID, N: 1, At: now,
		Status: 500, Latency: 1500 * time.Microsecond, Body: []byte("oops \xff")}, State: webhook.StateFailed}}, ""); err != nil {
		t.Fatal(err)
	}
	st, page, _ := f.do("GET", "/webhooks/"+id+"/messages?limit=2", "", false)
	list, _ := page["messages"].([]any)
	if st != 200 || len(list) != 2 || list[0].(map[string]any)["id"] != msgs[2].ID || page["next"] != msgs[1].ID {
		t.Fatalf("first page: %d %v", st, page)
	}
	st, page, _ = f.do("GET", "/webhooks/"+id+"/messages?limit=2&before="+msgs[1].ID, "", false)
	if list, _ := page["messages"].([]any); st != 200 || len(list) != 1 || page["next"] != nil {
		t.Errorf("second page: %d %v", st, page)
	}
	if st, page, _ = f.do("GET", "/webhooks/"+id+"/messages?state=failed", "", false); len(page["messages"].([]any)) != 1 {
		t.Errorf("failed ones: %d %v", st, page)
	}
	st, one, _ := f.do("GET", "/webhooks/"+id+"/messages/"+msgs[0].ID, "", false)
	log, _ := one["attempt_log"].([]any)
	if st != 200 || one["body"] != `{"n":0}` || len(log) != 1 || log[0].(map[string]any)["body"] != "oops \uFFFD" || log[0].(map[string]any)["latency_ms"] != 1.5 {
		t.Errorf("one message: %d %v", st, one)
	}
	for _, q := range []string{"?state=lost", "?limit=0", "?limit=201", "?before=msg_x"} {
		if st, _, _ := f.do("GET", "/webhooks/"+id+"/messages"+q, "", false); st != 400 {
			t.Errorf("messages%s: %d", q, st)
		}
	}
	if st, got, _ := f.do("POST", "/webhooks/"+id+"/messages/"+msgs[0].ID+"/replay", "", true); st != 202 || got["replayed"] != 1.0 {
		t.Errorf("replay one: %d %v", st, got)
	}
	if st, _, _ := f.do("POST", "/webhooks/"+id+"/messages/"+webhook.NewID(now)+"/replay", "", true); st != 404 {
		t.Errorf("replay a missing message: %d", st)
	}
	since := now.Add(-time.Minute).UTC().Format(time.RFC3339)
	if st, got, _ := f.do("POST", "/webhooks/"+id+"/replay", `{"since":"`+since+`"}`, true); st != 202 || got["replayed"] != 3.0 {
		t.Errorf("replay since: %d %v", st, got)
	}
	if st, _, _ := f.do("POST", "/webhooks/"+id+"/replay", `{"since":"yesterday"}`, true); st != 400 {
		t.Errorf("replay since a bad time: %d", st)
	}
}
