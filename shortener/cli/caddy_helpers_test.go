package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	_ "github.com/edgekit/caddy-edgekit/shortener"
	"github.com/edgekit/caddy-edgekit/shortener/cli"
)

// testKey is the API key of the test configs.
const testKey = "cli-test-key-0123456789abcdef"

// server is a running Caddy with the shortener, loaded in process.
type server struct {
	t      *testing.T
	tester *caddytest.Tester
	admin  int
	port   int
	api    string
}

// startCaddy starts Caddy with no config yet; load gives it one.
func startCaddy(t *testing.T) *server {
	t.Helper()
	s := &server{t: t, admin: testenv.FreePort(t), port: testenv.FreePort(t)}
	s.api = fmt.Sprintf("http://localhost:%d/api", s.port)
	s.tester = caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
		AdminPort:          s.admin,
		LoadRequestTimeout: 30 * time.Second,
		TestRequestTimeout: 30 * time.Second,
	})
	return s
}

// postgresStore is a store line for a fresh PostgreSQL schema.
func postgresStore(t *testing.T) string {
	return "store postgres " + testenv.Postgres(t)
}

// embeddedStore is a store line for a fresh embedded store file.
func embeddedStore(t *testing.T) string {
	return "store embedded " + filepath.Join(t.TempDir(), "links.db")
}

// load (re)loads the Caddyfile with the given store line and any more
// lines of the shortener's block.
func (s *server) load(store string, more ...string) {
	s.t.Helper()
	s.tester.InitServer(fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[3]d
	auto_https off
	skip_install_trust
}

http://localhost:%[2]d {
	shortener {
		%[4]s
		base_url https://sho.rt
		api /api
		api_key %[5]s
		api_read_key cli-read-key-0123456789abcdef
		%[6]s
	}
}
`, s.admin, s.port, testenv.FreePort(s.t), store, testKey, strings.Join(more, "\n\t\t")), "caddyfile")
	if s.t.Failed() {
		s.t.FailNow()
	}
}

// result is what one command printed and its exit code.
type result struct {
	code           int
	stdout, stderr string
}

// run runs `caddy shortener <args>` in process against the server, with
// the test key in SHORTENER_API_KEY.
func (s *server) run(args ...string) result {
	s.t.Helper()
	return s.runEnv(map[string]string{"SHORTENER_API": s.api, "SHORTENER_API_KEY": testKey}, "", args...)
}

// runEnv runs a command with the given environment and standard input.
func (s *server) runEnv(env map[string]string, stdin string, args ...string) result {
	s.t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := cli.Run(ctx, args, strings.NewReader(stdin), &out, &errb, cli.Env{
		Getenv:     func(k string) string { return env[k] },
		IsTerminal: func(io.Writer) bool { return false },
	})
	return result{code, out.String(), errb.String()}
}

// must runs a command that must exit 0.
func (s *server) must(args ...string) string {
	s.t.Helper()
	r := s.run(args...)
	if r.code != 0 {
		s.t.Fatalf("shortener %s: exit %d, stderr %q, stdout %q", strings.Join(args, " "), r.code, r.stderr, r.stdout)
	}
	return r.stdout
}
