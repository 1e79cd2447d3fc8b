package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/cli"
)

// webhooksBlock turns webhooks on, with the test receiver's loopback
// address allowed.
const webhooksBlock = `webhooks {
			allow_private 127.0.0.0/8
			timeout 2s
		}`

// TestWebhooksCommands runs `webhooks` against a running Caddy, on
// PostgreSQL and on the embedded store: endpoints made, listed, edited,
// rotated and deleted; messages delivered to a receiver, read and
// replayed; --json; refusals with their exit codes.
func TestWebhooksCommands(t *testing.T) {
	var hits atomic.Int64
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		hits.Add(1)
		io.WriteString(w, "thanks")
	}))
	defer rc.Close()
	s := startCaddy(t)
	for _, store := range []struct {
		name string
		line func(*testing.T) string
	}{{"postgres", postgresStore}, {"embedded", embeddedStore}} {
		t.Run(store.name, func(t *testing.T) {
			s.t = t
			s.load(store.line(t), webhooksBlock)
			id, other := testWebhookEndpoints(t, s, rc.URL+"/in")
			testWebhookMessages(t, s, id, &hits)
			testWebhookRefusals(t, s, other)
		})
	}
}

var endpointID = regexp.MustCompile(`(?m)^id\s+(ep_\S+)$`)

// testWebhookEndpoints creates two endpoints and returns their ids, the
// first one enabled for link.created.
func testWebhookEndpoints(t *testing.T, s *server, url string) (string, string) {
	out := s.must("webhooks", "create", url, "--type", "link.created", "--type", "click", "--description", "CRM sync")
	m := endpointID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("webhooks create printed\n%s\nwant an id line", out)
	}
	id := m[1]
	sq := squash(out)
	for _, want := range []string{"state enabled", "types link.created click", "description CRM sync", "keys 1",
		"secret whsec_", "The secret is shown this once"} {
		if !strings.Contains(sq, want) {
			t.Errorf("webhooks create printed\n%s\nwant %q", out, want)
		}
	}
	var e cli.Webhook
	out = s.must("webhooks", "create", url, "--type", "link.revoked", "--tag", "print", "--batch", "10", "--batch-wait", "2s", "--disabled", "--json")
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("webhooks create --json: %v\n%s", err, out)
	}
	if !strings.HasPrefix(e.Secret, "whsec_") || !e.Disabled || e.Batch != 10 || e.BatchWaitMS != 2000 || strings.Join(e.Tags, ",") != "print" {
		t.Errorf("webhooks create --json = %+v", e)
	}
	other := e.ID

	lines := strings.Split(strings.TrimSpace(s.must("webhooks", "list")), "\n")
	if len(lines) != 3 || squash(lines[0]) != "ID URL TYPES STATE CREATED" {
		t.Fatalf("webhooks list printed\n%s", strings.Join(lines, "\n"))
	}
	list := squash(strings.Join(lines, "\n"))
	for _, want := range []string{id + " " + url + " link.created click enabled", other + " " + url + " link.revoked disabled"} {
		if !strings.Contains(list, want) {
			t.Errorf("webhooks list printed\n%s\nwant %q", list, want)
		}
	}
	if out := s.must("webhooks", "list", "--json"); strings.Count(out, "\n") != 2 || strings.Contains(out, "whsec_") {
		t.Errorf("webhooks list --json printed\n%s\nwant two lines, no secret", out)
	}

	out = squash(s.must("webhooks", "edit", other, "--enable", "--clear-tags", "--code", "spring", "--type", "link.created", "--description", ""))
	for _, want := range []string{"state enabled", "types link.created", "tags -", "codes spring", "version 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("webhooks edit printed\n%s\nwant %q", out, want)
		}
	}
	if out = squash(s.must("webhooks", "edit", other, "--disable")); !strings.Contains(out, "state disabled (disabled through the API)") {
		t.Errorf("webhooks edit --disable printed\n%s", out)
	}
	if out = squash(s.must("webhooks", "get", other)); !strings.Contains(out, "batch 10 clicks or 2s") || strings.Contains(out, "secret") {
		t.Errorf("webhooks get printed\n%s", out)
	}

	out = squash(s.must("webhooks", "rotate", id, "--grace", "1h"))
	if !strings.Contains(out, "secret whsec_") || !strings.Contains(out, "keys 2 (rotated out, signing until ") {
		t.Errorf("webhooks rotate printed\n%s", out)
	}
	return id, other
}

// testWebhookMessages records two link.created events for endpoint id and
// reads, pages and replays their messages.
func testWebhookMessages(t *testing.T, s *server, id string, hits *atomic.Int64) {
	s.must("create", "https://example.com/hooked", "--code", "hooked")
	s.must("create", "https://example.com/hooked-too", "--code", "hooked-too")
	var msgs []cli.WebhookMessage
	eventually(t, 20*time.Second, "two messages delivered", func() bool {
		msgs = webhookMessages(t, s, "webhooks", "messages", id, "--state", "delivered", "--json")
		return len(msgs) == 2
	})
	if msgs[0].Type != "link.created" || msgs[0].Attempts != 1 || msgs[0].NextAt != nil {
		t.Errorf("messages --json: %+v", msgs[0])
	}
	r := s.run("webhooks", "messages", id, "--limit", "1")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) != 2 ||
		!strings.Contains(squash(lines[1]), msgs[0].ID+" link.created delivered 1 1 ") || r.stderr != "more: --before "+msgs[0].ID+", or --all\n" {
		t.Errorf("messages --limit 1: exit %d, stdout\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if all := webhookMessages(t, s, "webhooks", "messages", id, "--limit", "1", "--all", "--json"); len(all) != 2 || all[1].ID != msgs[1].ID {
		t.Errorf("messages --limit 1 --all: %+v, want both", all)
	}

	out := squash(s.must("webhooks", "message", id, msgs[1].ID))
	for _, want := range []string{"state delivered", `"type":"link.created"`, `"code":"hooked`, "N AT STATUS LATENCY ERROR ANSWER", " 200 ", "- thanks"} {
		if !strings.Contains(out, want) {
			t.Errorf("webhooks message printed\n%s\nwant %q", out, want)
		}
	}
	var m cli.WebhookMessage
	if err := json.Unmarshal([]byte(s.must("webhooks", "message", id, msgs[1].ID, "--json")), &m); err != nil || len(m.AttemptLog) != 1 || m.AttemptLog[0].Status != 200 {
		t.Errorf("webhooks message --json: %v %+v", err, m)
	}

	before := hits.Load()
	if out := s.must("webhooks", "replay", id, msgs[1].ID); out != "replayed 1 message\n" {
		t.Errorf("webhooks replay <msg> printed %q", out)
	}
	if out := s.must("webhooks", "replay", id, "--since", "2h", "--json"); out != `{"replayed":2}`+"\n" {
		t.Errorf("webhooks replay --since 2h --json printed %q", out)
	}
	eventually(t, 20*time.Second, "the replays delivered", func() bool { return hits.Load() >= before+2 })
}

// testWebhookRefusals: what the CLI refuses itself, and what the API
// refuses, one line each with its exit code.
func testWebhookRefusals(t *testing.T, s *server, id string) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{"private url", nil, []string{"webhooks", "create", "http://10.1.2.3/in", "--type", "click"}, cli.ExitUsage,
			"error: url: host '10.1.2.3' has no address the handler may reach: private or reserved, and not in allow_private (HTTP 400)"},
		{"unknown subcommand", nil, []string{"webhooks", "remove", id}, cli.ExitUsage, `unknown command "remove" for "shortener webhooks"`},
		{"no type", nil, []string{"webhooks", "create", "https://example.com/in"}, cli.ExitUsage, "error: --type is required"},
		{"unknown type", nil, []string{"webhooks", "create", "https://example.com/in", "--type", "link.deleted"}, cli.ExitUsage,
			`error: --type "link.deleted" is not an event type`},
		{"batch", nil, []string{"webhooks", "edit", id, "--batch", "5000"}, cli.ExitUsage, "error: --batch must be 0 to 1000"},
		{"nothing to change", nil, []string{"webhooks", "edit", id}, cli.ExitUsage, "error: nothing to change"},
		{"grace", nil, []string{"webhooks", "rotate", id, "--grace", "30d"}, cli.ExitUsage, `invalid argument "30d"`},
		{"replay both", nil, []string{"webhooks", "replay", id, "msg_x", "--since", "2h"}, cli.ExitUsage, "error: give a message id or --since"},
		{"since", nil, []string{"webhooks", "replay", id, "--since", "yesterday"}, cli.ExitUsage, "error: since: not an RFC 3339 date-time (HTTP 400)"},
		{"state", nil, []string{"webhooks", "messages", id, "--state", "lost"}, cli.ExitUsage, "error: --state must be"},
		{"no endpoint", nil, []string{"webhooks", "get", "ep_nothere"}, cli.ExitNotFound, `error: no webhook endpoint "ep_nothere" (HTTP 404)`},
		{"no message", nil, []string{"webhooks", "message", id, "msg_nothere"}, cli.ExitNotFound, "(HTTP 404)"},
		{"read key", map[string]string{"SHORTENER_API": s.api, "SHORTENER_API_KEY": "cli-read-key-0123456789abcdef"},
			[]string{"webhooks", "list"}, cli.ExitAuth, "(HTTP 403)"},
	} {
		env := tc.env
		if env == nil {
			env = map[string]string{"SHORTENER_API": s.api, "SHORTENER_API_KEY": testKey}
		}
		r := s.runEnv(env, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) || strings.Count(r.stderr, "\n") > 1 && tc.name != "grace" {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line with %q", tc.name, r.code, r.stderr, tc.code, tc.msg)
		}
	}
	if out := s.must("webhooks", "delete", id); out != "deleted "+id+"\n" {
		t.Errorf("webhooks delete printed %q", out)
	}
	if r := s.run("webhooks", "get", id); r.code != cli.ExitNotFound {
		t.Errorf("webhooks get after delete: exit %d %q", r.code, r.stderr)
	}
}

// webhookMessages runs a command printing messages as JSON lines.
func webhookMessages(t *testing.T, s *server, args ...string) []cli.WebhookMessage {
	t.Helper()
	var out []cli.WebhookMessage
	for _, line := range strings.Split(strings.TrimSpace(s.must(args...)), "\n") {
		if line == "" {
			continue
		}
		var m cli.WebhookMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: line %q: %v", strings.Join(args, " "), line, err)
		}
		out = append(out, m)
	}
	return out
}

// eventually waits up to within for cond.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
