package shortener

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

type batchAnswer struct {
	Results []struct {
		Status int            `json:"status"`
		Link   *link.Response `json:"link"`
		Error  string         `json:"error"`
	} `json:"results"`
}

func postBatch(t *testing.T, h *Handler, body string, header ...string) (int, batchAnswer) {
	t.Helper()
	if len(header) == 0 {
		header = auth()
	}
	w := serve(t, h, "POST", "/api/links/batch", body, header...)
	var out batchAnswer
	if w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("decoding %s: %v", w.Body, err)
		}
	}
	return w.Code, out
}

func TestAPIBatchMixed(t *testing.T) {
	for name, open := range txStores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			h := newHandler(t, s, nil)
			create(t, h, `{"long_url":"https://example.com/t","code":"taken-code"}`)
			items := []string{
				`{"long_url":"https://example.com/1","title":"one","tags":["a"]}`,
				`{"long_url":"javascript:alert(1)"}`,
				`{"long_url":"https://example.com/3","code":"taken-code"}`,
				`{"long_url":"https://example.com/4","code":"fresh-code"}`,
				`{"long_url":"https://example.com/5","unknown":1}`,
				`{"long_url":"https://example.com/6","code":"fresh-code"}`,
				`"not an object"`,
				`{"long_url":"https://example.com/8","codes":"sequential"}`,
				`{"long_url":"https://example.com/9","title":"bad\u0007"}`,
				`{"long_url":"https://example.com/10","reuse":true}`,
				`{"long_url":"https://example.com/10","reuse":true}`,
			}
			want := []int{201, 400, 409, 201, 400, 409, 400, 201, 400, 201, 200}
			status, out := postBatch(t, h, `{"links":[`+strings.Join(items, ",")+`]}`)
			if status != http.StatusOK || len(out.Results) != len(items) {
				t.Fatalf("batch = %d with %d results, want 200 with %d", status, len(out.Results), len(items))
			}
			for i, r := range out.Results {
				if r.Status != want[i] {
					t.Errorf("item %d: status %d (%s), want %d", i, r.Status, r.Error, want[i])
				}
				if (r.Link != nil) != (r.Status < 300) || (r.Error != "") != (r.Status >= 300) {
					t.Errorf("item %d: %+v, want a link xor an error", i, r)
				}
				if r.Link == nil {
					continue
				}
				if wantURL := fmt.Sprintf("https://example.com/%d", i+1); r.Link.LongURL != wantURL && i != 10 {
					t.Errorf("item %d: long_url %s, want %s (input order)", i, r.Link.LongURL, wantURL)
				}
				l, err := s.Get(t.Context(), r.Link.Code)
				if err != nil || l.LongURL != r.Link.LongURL {
					t.Errorf("item %d: stored %+v %v", i, l, err)
				}
			}
			if out.Results[0].Link.Title == nil || *out.Results[0].Link.Title != "one" {
				t.Errorf("item 0: title %v, want one", out.Results[0].Link.Title)
			}
			if out.Results[10].Link.Code != out.Results[9].Link.Code {
				t.Errorf("item 10 reused %s, want item 9's %s", out.Results[10].Link.Code, out.Results[9].Link.Code)
			}
			for _, i := range []int{1, 4, 8} {
				if !strings.Contains(out.Results[i].Error, map[int]string{1: "scheme", 4: "unknown", 8: "title"}[i]) {
					t.Errorf("item %d: error %q does not name the problem", i, out.Results[i].Error)
				}
			}
			// Each link redirects.
			if w := serve(t, h, "GET", "/"+out.Results[3].Link.Code, ""); w.Code != http.StatusFound || w.Header().Get("Location") != "https://example.com/4" {
				t.Errorf("redirect of a batch link = %d %s", w.Code, w.Header().Get("Location"))
			}
		})
	}
}

func TestAPIBatchBounds(t *testing.T) {
	for name, open := range txStores {
		t.Run(name, func(t *testing.T) {
			h := newHandler(t, open(t), func(h *Handler) { h.APIReadKeys = []string{"read-key-0123456789"} })
			item := func(i int) string { return fmt.Sprintf(`{"long_url":"https://example.com/%d"}`, i) }
			many := func(n int) string {
				items := make([]string, n)
				for i := range items {
					items[i] = item(i)
				}
				return `{"links":[` + strings.Join(items, ",") + `]}`
			}
			status, out := postBatch(t, h, many(maxBatch))
			if status != http.StatusOK || len(out.Results) != maxBatch {
				t.Fatalf("1,000 items = %d with %d results", status, len(out.Results))
			}
			codes := map[string]bool{}
			for i, r := range out.Results {
				if r.Status != 201 || r.Link.LongURL != fmt.Sprintf("https://example.com/%d", i) {
					t.Fatalf("item %d = %+v", i, r)
				}
				codes[r.Link.Code] = true
			}
			if len(codes) != maxBatch {
				t.Errorf("%d distinct codes, want %d", len(codes), maxBatch)
			}
			for body, want := range map[string]int{
				many(maxBatch + 1):              400,
				`{"links":[]}`:                  400,
				`{}`:                            400,
				`{"links":{}}`:                  400,
				`{"links":[],"links":[]}`:       400,
				`{"links":[` + item(0) + `]} x`: 400,
				`{"links":["` + strings.Repeat("x", maxBatchBody) + `"]}`: 413,
			} {
				w := serve(t, h, "POST", "/api/links/batch", body, auth()...)
				if w.Code != want || (want == 400 && !strings.Contains(errorOf(t, w.Body.Bytes()), "links") && !strings.Contains(errorOf(t, w.Body.Bytes()), "JSON")) {
					t.Errorf("batch %.40q = %d %s, want %d", body, w.Code, w.Body, want)
				}
			}
			if w := serve(t, h, "POST", "/api/links/batch", many(1), "Authorization", "Bearer read-key-0123456789"); w.Code != http.StatusForbidden {
				t.Errorf("batch with a read key = %d, want 403", w.Code)
			}
			if w := serve(t, h, "GET", "/api/links/batch", "", auth()...); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
				t.Errorf("GET batch = %d Allow %q, want 405 POST", w.Code, w.Header().Get("Allow"))
			}
		})
	}
}

// An Idempotency-Key applies to the whole batch.
func TestAPIBatchIdempotent(t *testing.T) {
	for name, open := range txStores {
		t.Run(name, func(t *testing.T) {
			h := newHandler(t, open(t), nil)
			body := `{"links":[{"long_url":"https://example.com/a"},{"long_url":"https://example.com/b","code":"bb-code"}]}`
			first := serve(t, h, "POST", "/api/links/batch", body, idem("batch-1")...)
			again := serve(t, h, "POST", "/api/links/batch", body, idem("batch-1")...)
			if first.Code != 200 || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay = %d %s, want the replay of %d %s", again.Code, again.Body, first.Code, first.Body)
			}
			if strings.Contains(first.Body.String(), `"status":409`) {
				t.Errorf("first batch: %s", first.Body)
			}
			if w := serve(t, h, "POST", "/api/links/batch", `{"links":[{"long_url":"https://example.com/a"}]}`, idem("batch-1")...); w.Code != 422 {
				t.Errorf("other body = %d, want 422", w.Code)
			}
		})
	}
}
