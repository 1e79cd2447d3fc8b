package shortener

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// refusal is one request the API refuses: each is served through serve(),
// whose checkExchange fails the test unless the document predicts the
// 400 (a schema the request breaks, or a BadRequest example).
type refusal struct {
	method, target, body string
	header               []string
}

// apiRefusals walks a 400 of each refusal site of the handler's API (see
// TestEvery400IsWalked); {code} is a link of the handler.
var apiRefusals = []refusal{
	// create
	{"POST", "/api/links", `{`, nil},
	{"POST", "/api/links", "{\"long_url\":\"https://example.com/\",\"title\":\"\xff\"}", nil},
	{"POST", "/api/links", `{"long_url":"https://example.com/","expires_at":"tomorrow"}`, nil},
	{"POST", "/api/links", `{"long_url":"https://example.com/","expires_at":"2001-01-01T00:00:00Z"}`, nil},
	{"POST", "/api/links", `{"long_url":"https://example.com/","codes":"pretty"}`, nil},
	{"POST", "/api/links", `{"long_url":"https://example.com/","code":"a!b"}`, nil},
	{"POST", "/api/links", `{"long_url":"https://example.com/","code":"export"}`, nil},
	{"POST", "/api/links", `{"long_url":"https://example.com/","code":"api"}`, nil},
	{"POST", "/api/links", `{"long_url":"https://example.com/"}`, []string{"Idempotency-Key", "a", "Idempotency-Key+", "b"}},
	{"POST", "/api/links", `{"long_url":"https://example.com/"}`, []string{"Idempotency-Key", ""}},
	{"POST", "/api/links", `{"long_url":"https://example.com/"}`, []string{"Idempotency-Key", strings.Repeat("k", 256)}},
	{"POST", "/api/links", `{"long_url":"https://example.com/"}`, []string{"Idempotency-Key", "clé"}},
	{"POST", "/api/links", `{"long_url":"https://example.com/","rules":[{}]}`, nil},
	{"POST", "/api/links", `{"long_url":"https://example.com/","fallback_url":"ftp://example.com/"}`, nil},
	// batch
	{"POST", "/api/links/batch", `[`, nil},
	{"POST", "/api/links/batch", `{"mode":"create","links":[{"long_url":"https://example.com/"}]}`, nil},
	{"POST", "/api/links/batch", `{"dry_run":false,"links":[{"long_url":"https://example.com/"}]}`, nil},
	{"POST", "/api/links/batch", `{"links":[]}`, nil},
	{"POST", "/api/links/batch", `{"mode":"import","links":[{"code":"i1","long_url":"https://example.com/"}]}`, []string{"Idempotency-Key", "k1"}},
	// rules preview
	{"POST", "/api/rules/preview", `{`, nil},
	{"POST", "/api/rules/preview", `{"rules":[{}],"visitor":{}}`, nil},
	{"POST", "/api/rules/preview", `{"visitor":{"user_agent":"` + strings.Repeat("u", 513) + `"}}`, nil},
	{"POST", "/api/rules/preview", `{"visitor":{"accept_language":"` + strings.Repeat("e", 1025) + `"}}`, nil},
	{"POST", "/api/rules/preview", `{"visitor":{"query":"` + strings.Repeat("q", 4097) + `"}}`, nil},
	{"POST", "/api/rules/preview", `{"visitor":{"country":"fr"}}`, nil},
	{"POST", "/api/rules/preview", `{"visitor":{"ip":"1.2.3"}}`, nil},
	{"POST", "/api/rules/preview", `{"visitor":{"at":"now"}}`, nil},
	// list
	{"GET", "/api/links?q=ab", "", nil},
	{"GET", "/api/links?tag=%21", "", nil},
	{"GET", "/api/links?status=bogus", "", nil},
	{"GET", "/api/links?sort=bogus", "", nil},
	{"GET", "/api/links?limit=0", "", nil},
	{"GET", "/api/links?a=%zz", "", nil},
	{"GET", "/api/links?q=abc&q=abd", "", nil},
	{"GET", "/api/links?tag=", "", nil},
	// export
	{"GET", "/api/links/export?format=xml", "", nil},
	{"GET", "/api/links/export?with_stats=2", "", nil},
	{"GET", "/api/links/export?with_stats=1&format=csv", "", nil},
	// one link
	{"PATCH", "/api/links/{code}", `{"title":"x"}`, []string{"If-Match", strings.Repeat(`"1",`, 32) + `"1"`}},
	{"PATCH", "/api/links/{code}", `{"title":"x"}`, []string{"If-Match", "5"}},
	{"PATCH", "/api/links/{code}", `{"title":7}`, nil},
	{"PATCH", "/api/links/{code}", `{"redirect_status":303}`, nil},
	{"PATCH", "/api/links/{code}", `{"valid_from":"soon"}`, nil},
	{"PATCH", "/api/links/{code}", `{"valid_from":"1999-01-01T00:00:00Z"}`, nil},
	{"PATCH", "/api/links/{code}", `{"max_clicks":0}`, nil},
	{"PATCH", "/api/links/{code}", `{`, nil},
	{"PATCH", "/api/links/{code}", "{\"notes\":\"\xfe\"}", nil},
	{"PATCH", "/api/links/{code}", `{"code":"other"}`, nil},
	{"PATCH", "/api/links/{code}", `{"long_url":null}`, nil},
	{"PATCH", "/api/links/{code}", `{"expires_at":"never"}`, nil},
	{"PATCH", "/api/links/{code}", `{"expires_at":"2001-01-01T00:00:00Z"}`, nil},
	{"PATCH", "/api/links/{code}", `{"variants":[{"name":"a","url":"https://example.com/a","weight":50},{"name":"b","url":"https://example.com/b","weight":40}]}`, nil},
	{"PATCH", "/api/links/{code}", `{"rules":[{"url":"http://10.0.0.1/"}]}`, nil},
	{"PATCH", "/api/links/{code}", `{"fallback_url":"http://10.0.0.1/"}`, nil},
	{"GET", "/api/links/{code}/history?limit=0", "", nil},
	{"GET", "/api/links/{code}/history?cursor=x", "", nil},
	{"GET", "/api/links/{code}/qr?format=gif", "", nil},
	{"GET", "/api/links/{code}/qr?size=10", "", nil},
	{"GET", "/api/links/{code}/qr?level=X", "", nil},
}

// importRefusals are import items each refused with a reason of its own.
var importRefusals = []string{
	"{\"code\":\"u1\",\"long_url\":\"https://example.com/\",\"title\":\"\xff\"}",
	"{\"code\":\"u2\",\"long_url\":\"https://example.com/\",\"\xff\":1}",
	`{"code":"u3","long_url":"https://example.com/","clicks":"x"}`,
	`{"code":"u4","long_url":"https://example.com/","bogus":1}`,
	`{"code":"u6","long_url":"https://example.com/","clicks":-1}`,
	`{"long_url":"https://example.com/"}`,
	`{"code":"a.b","long_url":"https://example.com/"}`,
	`{"code":"u7","long_url":"https://example.com/","created_at":"2020-01-01T00:00:00Z","expires_at":"2019-01-01T00:00:00Z"}`,
	`{"code":"u8","long_url":"https://example.com/","created_at":"2020-01-01T00:00:00Z","revoked_at":"2019-01-01T00:00:00Z"}`,
	`{"code":"u9","long_url":"https://example.com/","created_at":"then"}`,
	`{"code":"u10","long_url":"https://example.com/","created_at":"1980-01-01T00:00:00Z"}`,
	`{"code":"u11","long_url":"https://example.com/","created_at":"2999-01-01T00:00:00Z"}`,
	`{"code":"u12","long_url":"https://example.com/","remaining_clicks":1}`,
	`{"code":"u13","long_url":"https://example.com/","max_clicks":2,"remaining_clicks":3}`,
	`{"code":"u14","long_url":"https://example.com/","hourly":[{"hour":"2026-01-01T00:30:00Z","people":1,"bots":0}]}`,
	`{"code":"u15","long_url":"https://example.com/","hourly":[{"hour":"2026-01-01T00:00:00Z","people":1,"bots":0},{"hour":"2026-01-01T00:00:00Z","people":1,"bots":0}]}`,
	`{"code":"u16","long_url":"https://example.com/","hourly":[{"hour":"2026-01-01T00:00:00Z","people":-1,"bots":0}]}`,
	`{"code":"u17","long_url":"https://example.com/","hourly":[{"hour":"2026-01-01T00:00:00Z","people":1000000000000,"bots":0},{"hour":"2026-01-01T01:00:00Z","people":1000000000000,"bots":0}]}`,
	`{"code":"u18","long_url":"https://example.com/","clicks":1,"hourly":[{"hour":"2026-01-01T00:00:00Z","people":1,"bots":1}]}`,
	`{"code":"u19","long_url":"https://example.com/","hourly":` + hourlyRows(20001) + `}`,
	`{"code":"qr","long_url":"https://example.com/"}`,
}

func hourlyRows(n int) string {
	rows := make([]string, n)
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		rows[i] = `{"hour":"` + start.Add(time.Duration(i)*time.Hour).Format(time.RFC3339) + `","people":1,"bots":0}`
	}
	return "[" + strings.Join(rows, ",") + "]"
}

// walkRefusals serves every refusal and returns the messages answered,
// import items' reasons included.
func walkRefusals(t *testing.T) []string {
	h := newHandler(t, openTestEmbedded(t), nil)
	code := create(t, h, `{"long_url":"https://example.com/walk"}`).Code
	var msgs []string
	for _, r := range apiRefusals {
		header := append(auth(), r.header...)
		if r.method == http.MethodPatch {
			header = append(header, "Content-Type", "application/merge-patch+json")
		}
		w := serve(t, h, r.method, strings.ReplaceAll(r.target, "{code}", code), r.body, header...)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s %s %.80q = %d %s, want 400", r.method, r.target, r.body, w.Code, w.Body)
			continue
		}
		msgs = append(msgs, errorOf(t, w.Body.Bytes()))
	}
	body := `{"mode":"import","links":[` + strings.Join(importRefusals, ",") + `]}`
	w := serve(t, h, "POST", "/api/links/batch", body, auth()...)
	var out struct {
		Results []struct{ Result, Error string } `json:"results"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || len(out.Results) != len(importRefusals) {
		t.Fatalf("import of the refused items = %d %.300s", w.Code, w.Body)
	}
	for i, res := range out.Results {
		if res.Result != "refused" {
			t.Errorf("import item %.80s: %s, want refused", importRefusals[i], res.Result)
		}
		msgs = append(msgs, res.Error)
	}
	// with_stats needs click counting: refused where it is off.
	off := newHandler(t, openTestEmbedded(t), func(h *Handler) { h.ClicksOff = true })
	w = serve(t, off, "GET", "/api/links/export?with_stats=1", "", auth()...)
	return append(msgs, errorOf(t, w.Body.Bytes()))
}

// walkExempt are refusal sites no request of a client reaches through
// serve(), and why.
var walkExempt = map[string]string{
	"reading body: %v":      "a failed read of the connection, not a value a client sends",
	"%s given %d times":     "qr.go's own repeat check: checkQuery answers first",
	"invalid JSON item: %v": "an item's syntax and repeated fields: the batch's decode refuses them first",
}

// TestEvery400IsWalked: each 400 the handler's API can answer (each
// apiErr(http.StatusBadRequest, ...) and import refusal with a message of
// its own in the package's code) is walked by apiRefusals, and so checked
// against the document by serve(). A new refusal site without a walked
// request fails here.
func TestEvery400IsWalked(t *testing.T) {
	msgs := walkRefusals(t)
	for _, site := range refusalSites(t) {
		if _, ok := walkExempt[site]; ok {
			continue
		}
		re := formatRegexp(site)
		found := false
		for _, m := range msgs {
			found = found || re.MatchString(m)
		}
		if !found {
			t.Errorf("no walked request answers the 400 %q: add one to apiRefusals or importRefusals", site)
		}
	}
}

// refusalSites are the format strings of the package's 400s: the API's
// (apiErr with http.StatusBadRequest) and the import's (refuse), but a
// bare "%v" or "%s" that passes a library's message on (those are walked
// by the tests of each field).
func refusalSites(t *testing.T) []string {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var sites []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "ui") {
			continue // the dashboard's sign-in is not part of the API document
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if format, ok := refusalFormat(n); ok && format != "%v" && format != "%s" {
				sites = append(sites, format)
			}
			return true
		})
	}
	if len(sites) < 50 {
		t.Fatalf("found %d refusal sites; the scan is broken", len(sites))
	}
	return sites
}

// refusalFormat is the format of apiErr(http.StatusBadRequest, "...") or
// refuse(field, "...").
func refusalFormat(n ast.Node) (string, bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok || len(call.Args) < 2 {
		return "", false
	}
	fn, ok := call.Fun.(*ast.Ident)
	if !ok {
		return "", false
	}
	switch fn.Name {
	case "apiErr":
		sel, ok := call.Args[0].(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "StatusBadRequest" {
			return "", false
		}
	case "refuse":
	default:
		return "", false
	}
	lit, ok := call.Args[1].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// formatRegexp matches what a format string can print.
func formatRegexp(format string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(format); i++ {
		if format[i] == '%' && i+1 < len(format) {
			i++
			if format[i] == '%' {
				b.WriteString("%")
			} else {
				b.WriteString("(?s:.*)")
			}
			continue
		}
		b.WriteString(regexp.QuoteMeta(format[i : i+1]))
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
