package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/cli"
)

// TestCommands runs every command but import and export against a
// running Caddy, on PostgreSQL and on the embedded store: output, exit
// codes and one-line errors naming the field.
func TestCommands(t *testing.T) {
	s := startCaddy(t)
	for _, store := range []struct {
		name string
		line func(*testing.T) string
	}{{"postgres", postgresStore}, {"embedded", embeddedStore}} {
		t.Run(store.name, func(t *testing.T) {
			s.t = t
			s.load(store.line(t))
			testCreateGetEdit(t, s)
			testTargetingFlags(t, s)
			testListFollowsCursors(t, s)
			testStatsQRRevoke(t, s)
			testExitCodes(t, s)
		})
	}
}

func testCreateGetEdit(t *testing.T, s *server) {
	out := squash(s.must("create", "https://example.com/spring-sale", "--code", "spring", "--title", "Spring sale flyer",
		"--tag", "print", "--tag", "campaign:spring-2027"))
	for _, want := range []string{"code spring", "short_url https://sho.rt/spring", "tags print campaign:spring-2027", "status active"} {
		if !strings.Contains(out, want) {
			t.Errorf("create printed\n%s\nwant a line %q", out, want)
		}
	}
	var l cli.Link
	if err := json.Unmarshal([]byte(s.must("get", "spring", "--json")), &l); err != nil {
		t.Fatalf("get --json: %v", err)
	}
	if l.Code != "spring" || l.LongURL != "https://example.com/spring-sale" || *l.Title != "Spring sale flyer" {
		t.Errorf("get --json = %+v", l)
	}
	out = squash(s.must("edit", "spring", "--long-url", "https://example.com/spring-2027", "--title", "", "--tags", "print"))
	if !strings.Contains(out, "long_url https://example.com/spring-2027") || !strings.Contains(out, "title -") {
		t.Errorf("edit printed\n%s", out)
	}
	r := s.run("edit", "spring", "--notes", "late", "--if-match", `"1"`)
	if r.code != cli.ExitConflict || !strings.Contains(r.stderr, "If-Match") {
		t.Errorf("edit with a stale If-Match: exit %d %q, want 4 naming If-Match", r.code, r.stderr)
	}
	if r := s.run("edit", "spring"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "nothing to change") {
		t.Errorf("edit without a change: exit %d %q", r.code, r.stderr)
	}
}

// --rule (inline and @file with an array), --variants and --fallback-url
// reach the API; edit replaces and clears them; a refused rule names its
// field.
func testTargetingFlags(t *testing.T, s *server) {
	file := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(file, []byte(`[{"if":{"language":["fr"]},"url":"https://example.com/fr"},{"url":"https://example.com/all"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	s.must("create", "https://example.com/t", "--code", "targeted",
		"--rule", `{"name":"phones","if":{"device":["mobile"]},"url":"https://example.com/m"}`, "--rule", "@"+file,
		"--variants", `[{"name":"a","url":"https://example.com/a","weight":50},{"name":"b","url":"https://example.com/b","weight":50}]`,
		"--fallback-url", "https://example.com/ended")
	var l cli.Link
	if err := json.Unmarshal([]byte(s.must("get", "targeted", "--json")), &l); err != nil {
		t.Fatalf("get --json: %v", err)
	}
	var rules []map[string]any
	if err := json.Unmarshal(l.Rules, &rules); err != nil || len(rules) != 3 || rules[0]["name"] != "phones" {
		t.Errorf("created rules = %s, want 3 in order", l.Rules)
	}
	if l.FallbackURL == nil || *l.FallbackURL != "https://example.com/ended" || !strings.Contains(string(l.Variants), `"name":"b"`) {
		t.Errorf("created variants %s fallback %v", l.Variants, l.FallbackURL)
	}
	s.must("edit", "targeted", "--clear-rules", "--fallback-url", "")
	if err := json.Unmarshal([]byte(s.must("get", "targeted", "--json")), &l); err != nil {
		t.Fatalf("get --json: %v", err)
	}
	if string(l.Rules) != "null" || l.FallbackURL != nil || !strings.Contains(string(l.Variants), `"name":"b"`) {
		t.Errorf("after edit: rules %s fallback %v variants %s; want no rules, no fallback, the variants kept", l.Rules, l.FallbackURL, l.Variants)
	}
	r := s.run("edit", "targeted", "--rule", `{"url":"http://10.0.0.1/"}`)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "rules[0].url: host '10.0.0.1'") {
		t.Errorf("edit with a private rule url: exit %d %q, want a usage error naming rules[0].url", r.code, r.stderr)
	}
	if r := s.run("create", "https://example.com/", "--rule", "{"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--rule: not valid JSON") {
		t.Errorf("create --rule '{': exit %d %q", r.code, r.stderr)
	}
}

func testListFollowsCursors(t *testing.T, s *server) {
	for _, c := range []string{"list-a", "list-b", "list-c", "list-d", "list-e"} {
		s.must("create", "https://example.com/"+c, "--code", c, "--tag", "listed")
	}
	out := s.must("list", "--tag", "listed", "--page-size", "2", "--sort", "created", "--json")
	var codes []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l cli.Link
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("list --json line %q: %v", line, err)
		}
		codes = append(codes, l.Code)
	}
	if got := strings.Join(codes, " "); got != "list-a list-b list-c list-d list-e" {
		t.Errorf("list over 3 pages = %q", got)
	}
	out = s.must("list", "--search", "list-", "--limit", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "CODE") || !strings.Contains(lines[1], "list-e") {
		t.Errorf("list --limit 3 printed\n%s", out)
	}
	if r := s.run("list", "--search", "ab"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "error: q is 2 characters long") {
		t.Errorf("list with a 2-character search: exit %d %q", r.code, r.stderr)
	}
}

func testStatsQRRevoke(t *testing.T, s *server) {
	out := squash(s.must("stats", "spring", "--granularity", "day"))
	if !strings.Contains(out, "code spring") || !strings.Contains(out, "START") {
		t.Errorf("stats printed\n%s", out)
	}
	if r := s.run("stats", "spring", "--granularity", "fortnight"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "granularity") {
		t.Errorf("stats --granularity fortnight: exit %d %q", r.code, r.stderr)
	}
	png := filepath.Join(t.TempDir(), "spring.png")
	s.must("qr", "spring", "--format", "png", "--size", "128", "-o", png)
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("qr -o %s: %v, not a PNG", png, err)
	}
	if svg := s.must("qr", "spring"); !strings.Contains(svg, "<svg") {
		t.Errorf("qr to stdout = %.80q, want an SVG", svg)
	}
	if out := s.must("revoke", "spring"); out != "revoked spring\n" {
		t.Errorf("revoke printed %q", out)
	}
	if out := squash(s.must("get", "spring")); !strings.Contains(out, "status revoked") {
		t.Errorf("get after revoke printed\n%s", out)
	}
}

func testExitCodes(t *testing.T, s *server) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{"not found", nil, []string{"get", "nothere"}, cli.ExitNotFound, "error: "},
		{"bad url", nil, []string{"create", "javascript:alert(1)"}, cli.ExitUsage, "error: long_url scheme 'javascript' is not allowed (HTTP 400)"},
		{"bad tag", nil, []string{"create", "https://example.com/", "--tag", "spring sale"}, cli.ExitUsage, "error: tags[0]: only"},
		{"taken", nil, []string{"create", "https://example.com/", "--code", "list-a"}, cli.ExitConflict, "error: code 'list-a' is already taken (HTTP 409)"},
		{"no key", map[string]string{"SHORTENER_API": s.api}, []string{"list"}, cli.ExitAuth, "error: no API key"},
		{"wrong key", map[string]string{"SHORTENER_API": s.api, "SHORTENER_API_KEY": "wrong"}, []string{"list"}, cli.ExitAuth, "error: missing or invalid API key (HTTP 401)"},
		{"read key", map[string]string{"SHORTENER_API": s.api, "SHORTENER_API_KEY": "cli-read-key-0123456789abcdef"}, []string{"revoke", "list-a"}, cli.ExitAuth, "read-only"},
		{"no api", map[string]string{"SHORTENER_API_KEY": testKey}, []string{"list"}, cli.ExitUsage, "error: --api is required"},
		{"down", map[string]string{"SHORTENER_API": "http://127.0.0.1:1/api", "SHORTENER_API_KEY": testKey}, []string{"list"}, cli.ExitServer, "connection refused"},
		{"unknown flag", nil, []string{"list", "--colour"}, cli.ExitUsage, "unknown flag"},
	} {
		env := tc.env
		if env == nil {
			env = map[string]string{"SHORTENER_API": s.api, "SHORTENER_API_KEY": testKey}
		}
		r := s.runEnv(env, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) || strings.Count(r.stderr, "\n") > 1 && tc.name != "unknown flag" {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line with %q", tc.name, r.code, r.stderr, tc.code, tc.msg)
		}
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := s.runEnv(map[string]string{"SHORTENER_API": s.api}, "", "get", "list-a", "--api-key-file", keyFile); r.code != 0 {
		t.Errorf("--api-key-file: exit %d %q", r.code, r.stderr)
	}
}

// squash is table output with each run of spaces made one.
func squash(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
