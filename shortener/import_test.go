package shortener

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

type importAnswerT struct {
	Mode      string `json:"mode"`
	DryRun    bool   `json:"dry_run"`
	Created   int    `json:"created"`
	Skipped   int    `json:"skipped"`
	Conflicts int    `json:"conflicts"`
	Refused   int    `json:"refused"`
	Results   []struct {
		Code     string             `json:"code"`
		Result   string             `json:"result"`
		Field    *string            `json:"field"`
		Error    string             `json:"error"`
		Existing *link.ImportedLink `json:"existing"`
	} `json:"results"`
}

// postImport sends an import of items (dry_run when dry) and decodes a 200.
func postImport(t testing.TB, h *Handler, items []string, dry bool, header ...string) (int, importAnswerT, string) {
	t.Helper()
	if len(header) == 0 {
		header = auth()
	}
	body := fmt.Sprintf(`{"mode":"import","dry_run":%t,"links":[%s]}`, dry, strings.Join(items, ","))
	w := serve(t, h, "POST", "/api/links/batch", body, header...)
	var out importAnswerT
	if w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("decoding %s: %v", w.Body, err)
		}
	}
	return w.Code, out, w.Body.String()
}

// importItems is a sample import: what each item must give on an empty
// store, and on a second run.
var importItems = []struct {
	item        string
	first, then string // results
	field       string // of a refusal
}{
	{`{"code":"imp-plain","long_url":"https://example.com/plain"}`, "created", "skipped", ""},
	{`{"code":"a","long_url":"https://example.com/one-char","created_at":"2011-03-04T05:06:07.123456Z","clicks":4711,"title":"old","tags":["x","y"],"notes":"n"}`, "created", "skipped", ""},
	{`{"code":"Old_Code-9","long_url":"https://example.com/expired","created_at":"2015-01-01T00:00:00Z","expires_at":"2016-01-01T00:00:00Z","clicks":3}`, "created", "skipped", ""},
	{`{"code":"imp-revoked","long_url":"https://example.com/revoked","created_at":"2020-01-01T00:00:00Z","revoked_at":"2021-01-01T00:00:00Z"}`, "created", "skipped", ""},
	{`{"code":"imp-rules","long_url":"https://example.com/rules","max_clicks":10,"remaining_clicks":4,"redirect_status":301,"short_url":"http://other/imp-rules"}`, "created", "skipped", ""},
	{`{"code":"taken-here","long_url":"https://example.com/other"}`, "conflict", "conflict", ""},
	{`{"code":"imp-plain","long_url":"https://example.com/plain","clicks":9}`, "conflict", "conflict", ""},
	{`{"code":"api","long_url":"https://example.com/reserved"}`, "refused", "refused", "code"},
	{`{"code":"a.b","long_url":"https://example.com/dot"}`, "refused", "refused", "code"},
	{`{"long_url":"https://example.com/nocode"}`, "refused", "refused", "code"},
	{`{"code":"imp-js","long_url":"javascript:alert(1)"}`, "refused", "refused", "long_url"},
	{`{"code":"imp-future","long_url":"https://example.com/f","created_at":"2999-01-01T00:00:00Z"}`, "refused", "refused", "created_at"},
	{`{"code":"imp-1980","long_url":"https://example.com/f","created_at":"1980-01-01T00:00:00Z"}`, "refused", "refused", "created_at"},
	{`{"code":"imp-neg","long_url":"https://example.com/f","clicks":-1}`, "refused", "refused", "clicks"},
	{`{"code":"imp-huge","long_url":"https://example.com/f","clicks":1000000000001}`, "refused", "refused", "clicks"},
	{`{"code":"imp-frac","long_url":"https://example.com/f","clicks":1.5}`, "refused", "refused", "clicks"},
	{`{"code":"imp-exp","long_url":"https://example.com/f","created_at":"2020-01-01T00:00:00Z","expires_at":"2019-01-01T00:00:00Z"}`, "refused", "refused", "expires_at"},
	{`{"code":"imp-rev","long_url":"https://example.com/f","created_at":"2020-01-01T00:00:00Z","revoked_at":"2019-01-01T00:00:00Z"}`, "refused", "refused", "revoked_at"},
	{`{"code":"imp-tags","long_url":"https://example.com/f","tags":["a b"]}`, "refused", "refused", "tags"},
	{`{"code":"imp-unknown","long_url":"https://example.com/f","visits":1}`, "refused", "refused", "visits"},
	{`"not an object"`, "refused", "refused", ""},
	{`{"code":"imp-dup","long_url":"https://example.com/dup"}`, "created", "skipped", ""},
	{`{"code":"imp-dup","long_url":"https://example.com/dup2"}`, "conflict", "conflict", ""},
}

// sameOutcomes is what a dry run must answer as the import does: each
// item's code, result, field and error.
func sameOutcomes(a importAnswerT) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d created, %d skipped, %d conflicts, %d refused\n", a.Created, a.Skipped, a.Conflicts, a.Refused)
	for _, r := range a.Results {
		field := "-"
		if r.Field != nil {
			field = *r.Field
		}
		fmt.Fprintf(&b, "%s %s %s %s %t\n", r.Code, r.Result, field, r.Error, r.Existing != nil)
	}
	return b.String()
}

func importBodies() []string {
	out := make([]string, len(importItems))
	for i, it := range importItems {
		out[i] = it.item
	}
	return out
}

func checkImport(t *testing.T, out importAnswerT, second bool) {
	t.Helper()
	if len(out.Results) != len(importItems) {
		t.Fatalf("%d results, want %d", len(out.Results), len(importItems))
	}
	counts := map[string]int{}
	for i, want := range importItems {
		got := out.Results[i]
		w := want.first
		if second {
			w = want.then
		}
		counts[w]++
		if got.Result != w {
			t.Errorf("item %d %s: %s (%s), want %s", i, want.item, got.Result, got.Error, w)
		}
		if w == "refused" && (got.Field == nil || *got.Field != want.field || got.Error == "") {
			t.Errorf("item %d: refused in field %v (%s), want field %q", i, got.Field, got.Error, want.field)
		}
		if (w == "conflict" || w == "skipped") != (got.Existing != nil) {
			t.Errorf("item %d: existing %+v with result %s", i, got.Existing, w)
		}
	}
	if out.Created != counts["created"] || out.Skipped != counts["skipped"] || out.Conflicts != counts["conflict"] || out.Refused != counts["refused"] {
		t.Errorf("counts %+v, want %v", out, counts)
	}
}

// TestImportMode: an import keeps codes of other alphabets and lengths,
// times, expired and revoked links, rules and baselines; refuses with the
// field; a second run changes nothing; a dry run answers the same and
// writes nothing (both stores).
func TestImportMode(t *testing.T) {
	for name, open := range txStores {
		t.Run(name, func(t *testing.T) {
			h := newHandler(t, open(t), nil)
			dryH := newHandler(t, open(t), nil)
			for _, hh := range []*Handler{h, dryH} {
				create(t, hh, `{"long_url":"https://example.com/t","code":"taken-here"}`)
			}
			status, dry, body := postImport(t, dryH, importBodies(), true)
			if status != http.StatusOK || !dry.DryRun {
				t.Fatalf("dry run = %d %s", status, body)
			}
			checkImport(t, dry, false)
			if w := serve(t, dryH, "GET", "/api/links?limit=100", "", auth()...); !strings.Contains(w.Body.String(), `"links":[{"code":"taken-here"`) || strings.Count(w.Body.String(), `"code"`) != 1 {
				t.Fatalf("after the dry run the store holds %s, want taken-here only", w.Body)
			}
			status, first, body := postImport(t, h, importBodies(), false)
			if status != http.StatusOK || first.DryRun {
				t.Fatalf("import = %d %s", status, body)
			}
			checkImport(t, first, false)
			if sameOutcomes(dry) != sameOutcomes(first) {
				t.Errorf("dry run answered\n%s\nthe import\n%s", sameOutcomes(dry), sameOutcomes(first))
			}
			before := serve(t, h, "GET", "/api/links/export", "", auth()...).Body.String()
			_, second, _ := postImport(t, h, importBodies(), false)
			checkImport(t, second, true)
			if after := serve(t, h, "GET", "/api/links/export", "", auth()...).Body.String(); after != before {
				t.Errorf("the second import changed the export:\n%s\nwas\n%s", after, before)
			}
			checkImported(t, h)
		})
	}
}

// checkImported reads the imported links back through the API.
func checkImported(t *testing.T, h *Handler) {
	t.Helper()
	var l link.Response
	getJSON(t, h, "/api/links/a", http.StatusOK, &l)
	if l.CreatedAt != time.Date(2011, 3, 4, 5, 6, 7, 123456000, time.UTC) || l.Clicks == nil || *l.Clicks != 4711 ||
		l.Title == nil || *l.Title != "old" || fmt.Sprint(l.Tags) != "[x y]" {
		t.Errorf("GET a = %+v (clicks %v), want created 2011-03-04T05:06:07.123456Z, clicks 4711, title, tags", l, l.Clicks)
	}
	var rules link.Response
	getJSON(t, h, "/api/links/imp-rules", http.StatusOK, &rules)
	if rules.RemainingClicks == nil || *rules.RemainingClicks != 4 || rules.RedirectStatus == nil || *rules.RedirectStatus != 301 {
		t.Errorf("imp-rules = %+v, want 4 remaining clicks and 301", rules.RuleResponse)
	}
	var page struct {
		Links []link.Response `json:"links"`
	}
	getJSON(t, h, "/api/links?sort=-clicks&status=all&limit=2", http.StatusOK, &page)
	if len(page.Links) != 2 || page.Links[0].Code != "a" || page.Links[1].Code != "Old_Code-9" {
		t.Errorf("sort=-clicks starts with %+v, want a (4711), Old_Code-9 (3)", page.Links)
	}
	var st clicks.Stats
	getJSON(t, h, "/api/links/a/stats", http.StatusOK, &st)
	if st.Total != 0 || st.AllTime == nil || *st.AllTime != (clicks.Totals{Total: 4711, Imported: 4711}) {
		t.Errorf("stats of a: window total %d, all_time %+v; want 0 and 4711 imported", st.Total, st.AllTime)
	}
	csv := serve(t, h, "GET", "/api/links/export?format=csv", "", auth()...).Body.String()
	if !strings.Contains(csv, "\na,http://sho.rt/a,https://example.com/one-char,2011-03-04T05:06:07.123456Z,,,old,x y,n,4711\n") {
		t.Errorf("CSV export lacks a's row with 4711 clicks:\n%s", csv)
	}
	// Last: a redirect counts a click, which would move the totals above.
	for code, want := range map[string]int{"a": http.StatusFound, "Old_Code-9": http.StatusGone, "imp-revoked": http.StatusGone, "imp-plain": http.StatusFound} {
		if w := serve(t, h, "GET", "/"+code, ""); w.Code != want {
			t.Errorf("GET /%s = %d, want %d", code, w.Code, want)
		}
	}
}

// TestImportBaselineAddsToCounted: clicks counted after an import add to
// its baseline in every all-time total.
func TestImportBaselineAddsToCounted(t *testing.T) {
	for name, open := range txStores {
		t.Run(name, func(t *testing.T) {
			h := newHandler(t, open(t), func(h *Handler) { h.ClicksInterval = caddy.Duration(10 * time.Millisecond) })
			if status, out, body := postImport(t, h, []string{`{"code":"based","long_url":"https://example.com/b","clicks":100}`}, false); status != http.StatusOK || out.Created != 1 {
				t.Fatalf("import = %d %s", status, body)
			}
			for range 3 {
				if w := serve(t, h, "GET", "/based", ""); w.Code != http.StatusFound {
					t.Fatalf("redirect = %d", w.Code)
				}
			}
			eventually(t, 20*time.Second, "clicks counted", func() bool {
				n, err := h.clicks.Total(context.Background(), "based")
				return err == nil && n == 103
			})
			var st clicks.Stats
			getJSON(t, h, "/api/links/based/stats", http.StatusOK, &st)
			if st.Total != 3 || *st.AllTime != (clicks.Totals{Total: 103, People: 0, Bots: 3, Imported: 100}) {
				t.Errorf("stats: window %d, all_time %+v; want 3 and 103 (3 bots + 100 imported)", st.Total, *st.AllTime)
			}
			if _, again, _ := postImport(t, h, []string{`{"code":"based","long_url":"https://example.com/b","clicks":100}`}, false); again.Skipped != 1 {
				t.Errorf("the same import after clicks: %+v, want skipped (the baseline is unchanged)", again)
			}
		})
	}
}

// TestImportConcurrent: two importers of the same file at once create
// each code once; the other run reports it skipped.
func TestImportConcurrent(t *testing.T) {
	for name, open := range txStores {
		t.Run(name, func(t *testing.T) {
			h := newHandler(t, open(t), nil)
			var items []string
			for i := range 300 {
				items = append(items, fmt.Sprintf(`{"code":"cc-%03d","long_url":"https://example.com/%d","clicks":%d}`, i, i, i))
			}
			var wg sync.WaitGroup
			answers := make([]importAnswerT, 4)
			for n := range answers {
				wg.Go(func() {
					chunk := items
					if n%2 == 1 { // the other importer sends the file backwards
						chunk = make([]string, len(items))
						for i := range items {
							chunk[i] = items[len(items)-1-i]
						}
					}
					status, out, body := postImport(t, h, chunk, false)
					if status != http.StatusOK {
						t.Errorf("importer %d: %d %s", n, status, body)
					}
					answers[n] = out
				})
			}
			wg.Wait()
			created := map[string]int{}
			for _, a := range answers {
				for _, r := range a.Results {
					switch r.Result {
					case "created":
						created[r.Code]++
					case "skipped":
					default:
						t.Errorf("%s: %s (%s), want created or skipped", r.Code, r.Result, r.Error)
					}
				}
			}
			for i := range 300 {
				if c := fmt.Sprintf("cc-%03d", i); created[c] != 1 {
					t.Errorf("%s created %d times, want once", c, created[c])
				}
			}
		})
	}
}

// TestImportRefusals: who may import and what a batch refuses whole.
func TestImportRefusals(t *testing.T) {
	h := newHandler(t, openTestEmbedded(t), func(h *Handler) { h.APIReadKeys = []string{"read-key-0123456789"} })
	item := `{"code":"x-1","long_url":"https://example.com/x"}`
	cases := []struct {
		body   string
		header []string
		want   int
	}{
		{`{"mode":"import","links":[` + item + `]}`, []string{"Authorization", "Bearer read-key-0123456789"}, http.StatusForbidden},
		{`{"mode":"import","links":[` + item + `]}`, idem("k"), http.StatusBadRequest},
		{`{"dry_run":true,"links":[` + item + `]}`, auth(), http.StatusBadRequest},
		{`{"mode":"merge","links":[` + item + `]}`, auth(), http.StatusBadRequest},
		{`{"mode":"import","links":[]}`, auth(), http.StatusBadRequest},
		{`{"mode":"import","mode":"import","links":[` + item + `]}`, auth(), http.StatusBadRequest},
	}
	for _, c := range cases {
		if w := serve(t, h, "POST", "/api/links/batch", c.body, c.header...); w.Code != c.want {
			t.Errorf("%s = %d %s, want %d", c.body, w.Code, w.Body, c.want)
		}
	}
	if _, err := h.store.Get(t.Context(), "x-1"); err == nil {
		t.Error("a refused import stored x-1")
	}
}
