package cli_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/cli"
)

// testFingerprint is an API key fingerprint a domain may be scoped to.
const testFingerprint = "0123456789abcdef"

// TestDomainsCommands runs `domains` and the link commands' --domain
// against a running Caddy, on PostgreSQL and on the embedded store:
// domains made, listed, edited and deleted (refused while they have
// links, then with --force); one code on the default domain and on a
// link domain with two destinations; refusals with their exit codes.
func TestDomainsCommands(t *testing.T) {
	s := startCaddy(t)
	for _, store := range []struct {
		name string
		line func(*testing.T) string
	}{{"postgres", postgresStore}, {"embedded", embeddedStore}} {
		t.Run(store.name, func(t *testing.T) {
			s.t = t
			s.load(store.line(t), "api_key "+scopedKey)
			testDomainsCRUD(t, s)
			testLinksOnDomains(t, s)
			testScopedKey(t, s)
			testDomainsDelete(t, s)
			testDomainsRefusals(t, s)
		})
	}
}

func testDomainsCRUD(t *testing.T, s *server) {
	dir := t.TempDir()
	aasa := filepath.Join(dir, "aasa.json")
	if err := os.WriteFile(aasa, []byte("{\n  \"applinks\": {\"details\": []}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := squash(s.must("domains", "create", "go.example.com", "--root-redirect", "https://example.com/",
		"--not-found-redirect", "https://example.com/404", "--apple-app-site-association", aasa, "--key", testFingerprint))
	for _, want := range []string{"host go.example.com", "root_redirect https://example.com/", "not_found_redirect https://example.com/404",
		"apple_app_site_association 27 bytes", "assetlinks -", "keys " + testFingerprint, "version 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("domains create printed\n%s\nwant %q", out, want)
		}
	}
	var d cli.Domain
	out = s.must("domains", "create", "Links.Example.ORG.", "--json")
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("domains create --json: %v\n%s", err, out)
	}
	if d.Host != "links.example.org" || d.RootRedirect != nil || string(d.Assetlinks) != "null" || len(d.Keys) != 0 || d.Version != 1 {
		t.Errorf("domains create --json = %+v", d)
	}

	lines := strings.Split(strings.TrimSpace(s.must("domains", "list")), "\n")
	if len(lines) != 3 || squash(lines[0]) != "HOST ROOT REDIRECT NOT FOUND REDIRECT APP LINKS KEYS CREATED" {
		t.Fatalf("domains list printed\n%s", strings.Join(lines, "\n"))
	}
	list := squash(strings.Join(lines, "\n"))
	for _, want := range []string{"go.example.com https://example.com/ https://example.com/404 apple 1 ", "links.example.org - - - 0 "} {
		if !strings.Contains(list, want) {
			t.Errorf("domains list printed\n%s\nwant %q", list, want)
		}
	}
	if out := s.must("domains", "list", "--json"); strings.Count(out, "\n") != 2 || !strings.Contains(out, `"host":"links.example.org"`) {
		t.Errorf("domains list --json printed\n%s", out)
	}

	links := filepath.Join(dir, "assetlinks.json")
	if err := os.WriteFile(links, []byte(`[{"relation": ["delegate_permission/common.handle_all_urls"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	out = squash(s.must("domains", "edit", "go.example.com", "--clear-root-redirect", "--clear-keys", "--assetlinks", links))
	for _, want := range []string{"root_redirect -", "not_found_redirect https://example.com/404", "apple_app_site_association 27 bytes",
		"keys -", "version 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("domains edit printed\n%s\nwant %q", out, want)
		}
	}
	if !regexpMatch(out, `assetlinks \d+ bytes`) {
		t.Errorf("domains edit printed\n%s\nwant an assetlinks size", out)
	}
	if out := squash(s.must("domains", "get", "GO.example.com")); !strings.Contains(out, "host go.example.com") || !strings.Contains(out, "version 2") {
		t.Errorf("domains get printed\n%s", out)
	}
}

// testLinksOnDomains: the code "same" on the default domain and on
// go.example.com, each with its destination, through every link command
// that names one.
func testLinksOnDomains(t *testing.T, s *server) {
	s.must("create", "https://example.com/default", "--code", "same")
	out := squash(s.must("create", "https://example.com/on-go", "--code", "same", "--domain", "go.example.com"))
	for _, want := range []string{"code same", "domain go.example.com", "short_url https://go.example.com/same", "long_url https://example.com/on-go"} {
		if !strings.Contains(out, want) {
			t.Errorf("create --domain printed\n%s\nwant %q", out, want)
		}
	}
	var def, onGo cli.Link
	if err := json.Unmarshal([]byte(s.must("get", "same", "--json")), &def); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(s.must("get", "same", "--domain", "Go.Example.com", "--json")), &onGo); err != nil {
		t.Fatal(err)
	}
	if def.Domain != "" || def.LongURL != "https://example.com/default" || def.ShortURL != "https://sho.rt/same" ||
		onGo.Domain != "go.example.com" || onGo.LongURL != "https://example.com/on-go" {
		t.Errorf("get same: default %+v, on go.example.com %+v", def.Response, onGo.Response)
	}
	if r := s.run("get", "same", "--domain", "links.example.org"); r.code != cli.ExitNotFound {
		t.Errorf("get on a domain without the code: exit %d %q", r.code, r.stderr)
	}

	s.must("create", "https://example.com/only-go", "--code", "only-go", "--domain", "go.example.com")
	defList, goList := s.must("list", "--json"), s.must("list", "--json", "--domain", "go.example.com")
	if strings.Contains(defList, "on-go") || strings.Contains(defList, "only-go") || !strings.Contains(defList, "https://example.com/default") {
		t.Errorf("list on the default domain printed\n%s", defList)
	}
	if strings.Count(goList, "\n") != 2 || strings.Contains(goList, "https://example.com/default") || !strings.Contains(goList, "only-go") {
		t.Errorf("list --domain go.example.com printed\n%s", goList)
	}
	if out := s.must("list", "--domain", "links.example.org"); squash(strings.TrimSpace(out)) != "CODE STATUS CLICKS CREATED LONG URL TITLE TAGS" {
		t.Errorf("list on an empty domain printed\n%s", out)
	}

	out = squash(s.must("edit", "same", "--domain", "go.example.com", "--title", "Go"))
	if !strings.Contains(out, "domain go.example.com") || !strings.Contains(out, "title Go") {
		t.Errorf("edit --domain printed\n%s", out)
	}
	if out := squash(s.must("get", "same")); !strings.Contains(out, "title -") {
		t.Errorf("edit --domain changed the default domain's link:\n%s", out)
	}
	if out := s.must("export", "--domain", "go.example.com"); strings.Count(out, "\n") != 2 || strings.Contains(out, "/default") {
		t.Errorf("export --domain printed\n%s", out)
	}
	if out := s.must("qr", "same", "--domain", "go.example.com"); !strings.Contains(out, "<svg") {
		t.Errorf("qr --domain printed %.80q", out)
	}
	if out := s.must("stats", "same", "--domain", "go.example.com", "--json"); !strings.Contains(out, `"same"`) {
		t.Errorf("stats --domain printed %.200q", out)
	}
	if out := s.must("revoke", "only-go", "--domain", "go.example.com"); out != "revoked only-go\n" {
		t.Errorf("revoke --domain printed %q", out)
	}
	if r := s.run("get", "same", "--domain", "nothere.example.com"); r.code != cli.ExitNotFound || !strings.Contains(r.stderr, "(HTTP 404)") {
		t.Errorf("--domain naming no link domain: exit %d %q", r.code, r.stderr)
	}
}

// scopedKey is an API key the tests scope to one domain.
const scopedKey = "cli-scoped-key-0123456789abcdef"

// testScopedKey: a key scoped to one domain works there and is refused
// (exit 3, the server's 403) on another domain and on the default domain.
func testScopedKey(t *testing.T, s *server) {
	sum := sha256.Sum256([]byte(scopedKey))
	s.must("domains", "create", "mine.example", "--key", hex.EncodeToString(sum[:8]))
	s.must("domains", "create", "theirs.example")
	s.must("create", "https://example.com/theirs", "--code", "theirs", "--domain", "theirs.example")
	env := map[string]string{"SHORTENER_API": s.api, "SHORTENER_API_KEY": scopedKey}
	if r := s.runEnv(env, "", "create", "https://example.com/mine", "--code", "mine", "--domain", "mine.example"); r.code != 0 {
		t.Errorf("the scoped key on its domain: exit %d, %s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"list", "--domain", "theirs.example"},
		{"get", "theirs", "--domain", "theirs.example"},
		{"create", "https://example.com/x", "--domain", "theirs.example"},
		{"edit", "theirs", "--title", "x", "--domain", "theirs.example"},
		{"list"},
		{"domains", "create", "more.example"},
	} {
		if r := s.runEnv(env, "", args...); r.code != cli.ExitAuth || !strings.Contains(r.stderr, "(HTTP 403)") {
			t.Errorf("the scoped key: %v: exit %d, %s; want %d and a 403", args, r.code, r.stderr, cli.ExitAuth)
		}
	}
	for _, host := range []string{"mine.example", "theirs.example"} {
		s.must("domains", "delete", host, "--force")
	}
}

// testDomainsDelete: a domain with links is refused without --force and
// deleted with it, its links revoked; the default domain's link stays.
func testDomainsDelete(t *testing.T, s *server) {
	r := s.run("domains", "delete", "go.example.com")
	if r.code != cli.ExitConflict || r.stderr != "error: the link domain go.example.com has links: delete with ?force=true to revoke them; --force revokes them (HTTP 409)\n" {
		t.Errorf("domains delete with links: exit %d, stderr %q", r.code, r.stderr)
	}
	if out := s.must("domains", "delete", "go.example.com", "--force"); out != "deleted go.example.com (its links revoked)\n" {
		t.Errorf("domains delete --force printed %q", out)
	}
	if r := s.run("domains", "get", "go.example.com"); r.code != cli.ExitNotFound || !strings.Contains(r.stderr, `no link domain "go.example.com" (HTTP 404)`) {
		t.Errorf("domains get after delete: exit %d %q", r.code, r.stderr)
	}
	if r := s.run("get", "same", "--domain", "go.example.com"); r.code != cli.ExitNotFound {
		t.Errorf("get on a deleted domain: exit %d %q", r.code, r.stderr)
	}
	if out := squash(s.must("get", "same")); !strings.Contains(out, "long_url https://example.com/default") || !strings.Contains(out, "status active") {
		t.Errorf("the default domain's link after the delete:\n%s", out)
	}
	if out := s.must("domains", "delete", "links.example.org", "--json"); out != `{"deleted":true,"host":"links.example.org","links_revoked":false}`+"\n" {
		t.Errorf("domains delete --json printed %q", out)
	}
	if out := s.must("domains", "list", "--json"); out != "" {
		t.Errorf("domains list after the deletes printed %q", out)
	}
}

func testDomainsRefusals(t *testing.T, s *server) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`"applinks"`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{"ip", nil, []string{"domains", "create", "10.1.2.3"}, cli.ExitUsage, "error: host: a link domain is a name, not an IP address (HTTP 400)"},
		{"key", nil, []string{"domains", "create", "k.example.com", "--key", "nope"}, cli.ExitUsage, `error: keys[0]: "nope" is not an API key fingerprint`},
		{"not json", nil, []string{"domains", "create", "k.example.com", "--assetlinks", bad}, cli.ExitUsage, "must hold a JSON object or array"},
		{"nothing to change", nil, []string{"domains", "edit", "k.example.com"}, cli.ExitUsage, "error: nothing to change"},
		{"both", nil, []string{"domains", "edit", "k.example.com", "--key", testFingerprint, "--clear-keys"}, cli.ExitUsage,
			"error: --key and --clear-keys go one at a time"},
		{"no domain", nil, []string{"domains", "get", "k.example.com"}, cli.ExitNotFound, `error: no link domain "k.example.com" (HTTP 404)`},
		{"unknown subcommand", nil, []string{"domains", "remove", "k.example.com"}, cli.ExitUsage, `unknown command "remove" for "shortener domains"`},
		{"read key", map[string]string{"SHORTENER_API": s.api, "SHORTENER_API_KEY": "cli-read-key-0123456789abcdef"},
			[]string{"domains", "create", "k.example.com"}, cli.ExitAuth, "(HTTP 403)"},
	} {
		env := tc.env
		if env == nil {
			env = map[string]string{"SHORTENER_API": s.api, "SHORTENER_API_KEY": testKey}
		}
		r := s.runEnv(env, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) || strings.Count(r.stderr, "\n") > 1 {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line with %q", tc.name, r.code, r.stderr, tc.code, tc.msg)
		}
	}
}

// TestDomainFlagOnEveryLinkCommand: each link command sends
// ?domain=<host>, URL-escaped, on its request to <api>/links, and
// domains and webhooks commands send none.
func TestDomainFlagOnEveryLinkCommand(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"no"}`))
	}))
	defer srv.Close()
	env := map[string]string{"SHORTENER_API": srv.URL + "/api", "SHORTENER_API_KEY": testKey}
	s := &server{t: t}
	const dom, esc = "bücher.example&x=1", "domain=b%C3%BCcher.example%26x%3D1"
	for _, args := range [][]string{
		{"create", "https://example.com/"}, {"get", "c"}, {"edit", "c", "--title", "t"}, {"revoke", "c"},
		{"list"}, {"stats", "c"}, {"qr", "c"}, {"export"}, {"import", "--from", "ndjson", "-", "--no-progress"},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		s.runEnv(env, `{"code":"c","long_url":"https://example.com/"}`+"\n", append(args, "--domain", dom)...)
		mu.Lock()
		if len(seen) == 0 {
			t.Errorf("%s --domain: no request", args[0])
		}
		for _, u := range seen {
			if !strings.HasPrefix(u, "/api/links") || !strings.Contains(u, esc) {
				t.Errorf("%s --domain: requested %s, want /api/links... with %s", args[0], u, esc)
			}
		}
		mu.Unlock()
	}
	for _, args := range [][]string{{"domains", "list"}, {"webhooks", "list"}} {
		if r := s.runEnv(env, "", append(args, "--domain", "x.example.com")...); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "unknown flag: --domain") {
			t.Errorf("%s --domain: exit %d %q, want an unknown flag", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	mu.Lock()
	seen = nil
	mu.Unlock()
	s.runEnv(env, "", "get", "c")
	if len(seen) != 1 || strings.Contains(seen[0], "domain=") {
		t.Errorf("get without --domain requested %v", seen)
	}
}

func regexpMatch(s, re string) bool { return regexp.MustCompile(re).MatchString(s) }
