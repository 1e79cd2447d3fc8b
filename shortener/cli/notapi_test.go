package cli_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/cli"
)

// --api pointing at the site root (or any server that is not the
// shortener's API: an HTML page, a 404 with an empty body, a redirect)
// ends each command with one line naming the URL requested, the status
// and the Content-Type received, and what --api should look like, exit 5.
func TestCLIAPIAtSiteRoot(t *testing.T) {
	site := map[string]http.HandlerFunc{
		"HTML page": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, "<!doctype html><title>Home</title><p>Welcome")
		},
		"text 200":  func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "home") }, // Caddy's respond
		"empty 200": func(w http.ResponseWriter, r *http.Request) {},
		"empty 404": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) },
		"text 404":  func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://sho.rt/", http.StatusPermanentRedirect)
		},
	}
	for name, h := range site {
		srv := httptest.NewServer(h)
		env := map[string]string{"SHORTENER_API": srv.URL, "SHORTENER_API_KEY": "k"}
		for _, args := range [][]string{{"list"}, {"get", "abc"}, {"stats", "abc"}, {"create", "https://example.com/"}} {
			var out, errb bytes.Buffer
			code := cli.Run(context.Background(), args, strings.NewReader(""), &out, &errb, cli.Env{
				Getenv:     func(k string) string { return env[k] },
				IsTerminal: func(io.Writer) bool { return false },
			})
			msg := errb.String()
			var status string
			switch name {
			case "HTML page", "text 200", "empty 200":
				status = " 200 "
			case "redirect":
				status = " 308 "
			default:
				status = " 404 "
			}
			ctype := `Content-Type "text/html; charset=utf-8"`
			if name == "empty 200" || name == "empty 404" {
				ctype = "no Content-Type"
			}
			if name == "text 404" || name == "text 200" {
				ctype = `Content-Type "text/plain; charset=utf-8"`
			}
			if name == "redirect" { // a page for GET, nothing for POST
				ctype = "redirected to https://sho.rt/"
			}
			for _, want := range []string{srv.URL + "/links", status, ctype, "--api must be the shortener's API URL", srv.URL + "/api"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s, %v: stderr %q lacks %q", name, args, msg, want)
				}
			}
			if code != cli.ExitServer || strings.Count(msg, "\n") != 1 {
				t.Errorf("%s, %v: exit %d, stderr %q; want exit %d and one line", name, args, code, msg, cli.ExitServer)
			}
		}
		srv.Close()
	}
}
