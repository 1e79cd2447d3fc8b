package shortener

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/link/linktest"
)

// bothStores runs f on a fresh embedded store and a fresh PostgreSQL store.
func bothStores(t *testing.T, f func(t *testing.T, s link.Store)) {
	t.Run("embedded", func(t *testing.T) { f(t, openTestEmbedded(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, openTestPostgres(t)) })
}

func mergePatch(t testing.TB, h *Handler, code, body string, header ...string) *testingAnswer {
	t.Helper()
	hd := append([]string{"Content-Type", "application/merge-patch+json"}, auth()...)
	w := serve(t, h, "PATCH", "/api/links/"+code, body, append(hd, header...)...)
	return &testingAnswer{Code: w.Code, Body: w.Body.String(), Header: w.Header()}
}

// testingAnswer is a finished API answer.
type testingAnswer struct {
	Code   int
	Body   string
	Header http.Header
}

func getLink(t testing.TB, h *Handler, code string) (link.Response, string) {
	t.Helper()
	w := serve(t, h, "GET", "/api/links/"+code, "", auth()...)
	if w.Code != http.StatusOK {
		t.Fatalf("GET %s = %d %s", code, w.Code, w.Body)
	}
	var out link.Response
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out, w.Header().Get("ETag")
}

// TestAPIPatchMergeSemantics: RFC 7396 on every editable field, on both
// stores: absent keeps, null clears (long_url cannot be cleared), a value
// replaces (tags as a whole), and every refusal changes nothing.
func TestAPIPatchMergeSemantics(t *testing.T) {
	bothStores(t, func(t *testing.T, s link.Store) {
		h := newHandler(t, s, nil)
		exp := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
		exp2 := exp.Add(24 * time.Hour)
		const start = `{"long_url":"https://example.com/a","title":"T","tags":["x","y"],"notes":"N","expires_at":%q}`
		// want: the fields after the patch as the API shows them (compact JSON); "" = as created.
		for _, tc := range []struct {
			name, patch string
			status      int
			want        map[string]string
		}{
			{"empty", `{}`, 200, nil},
			{"url", `{"long_url":"https://example.org/b?q=1"}`, 200, map[string]string{"long_url": `"https://example.org/b?q=1"`}},
			{"clear title", `{"title":null}`, 200, map[string]string{"title": `null`}},
			{"empty title clears", `{"title":""}`, 200, map[string]string{"title": `null`}},
			{"tags replace", `{"tags":["z"]}`, 200, map[string]string{"tags": `["z"]`}},
			{"clear tags", `{"tags":null}`, 200, map[string]string{"tags": `null`}},
			{"empty tags clear", `{"tags":[]}`, 200, map[string]string{"tags": `null`}},
			{"notes", `{"notes":"a\nb"}`, 200, map[string]string{"notes": `"a\nb"`}},
			{"clear expiry", `{"expires_at":null}`, 200, map[string]string{"expires_at": `null`}},
			{"new expiry", fmt.Sprintf(`{"expires_at":%q}`, exp2.Format(time.RFC3339)), 200, map[string]string{"expires_at": fmt.Sprintf("%q", exp2.Format(time.RFC3339))}},
			{"several", `{"title":"U","notes":null,"tags":["a","b"]}`, 200, map[string]string{"title": `"U"`, "notes": `null`, "tags": `["a","b"]`}},
			{"redirect status", `{"redirect_status":301}`, 200, map[string]string{"redirect_status": `301`}},
			{"max clicks", `{"max_clicks":5}`, 200, map[string]string{"max_clicks": `5`}},
			{"valid from", `{"valid_from":"2026-01-01T00:00:00Z"}`, 200, map[string]string{"valid_from": `"2026-01-01T00:00:00Z"`}},
			{"forward query", `{"forward_query":true}`, 200, map[string]string{"forward_query": `true`}},
			{"rules cleared", `{"redirect_status":null,"max_clicks":null,"valid_from":null,"forward_query":null}`, 200, nil},
			{"bad status", `{"redirect_status":300}`, 400, nil},
			{"zero max clicks", `{"max_clicks":0}`, 400, nil},
			{"valid from after expiry", `{"valid_from":"2999-01-01T00:00:00Z"}`, 400, nil},
			{"valid from too early", `{"valid_from":"1999-01-01T00:00:00Z"}`, 400, nil},
			{"forward query type", `{"forward_query":"yes"}`, 400, nil},
			{"clear url", `{"long_url":null}`, 400, nil},
			{"bad url", `{"long_url":"javascript:alert(1)"}`, 400, nil},
			{"self url", `{"long_url":"https://sho.rt/loop"}`, 400, nil},
			{"url type", `{"long_url":5}`, 400, nil},
			{"past expiry", `{"expires_at":"2001-01-01T00:00:00Z"}`, 400, nil},
			{"bad expiry", `{"expires_at":"tomorrow"}`, 400, nil},
			{"bad tag", `{"tags":["a b"]}`, 400, nil},
			{"dup tag", `{"tags":["a","a"]}`, 400, nil},
			{"long title", fmt.Sprintf(`{"title":%q}`, strings.Repeat("t", link.MaxTitle+1)), 400, nil},
			{"title newline", `{"title":"a\nb"}`, 400, nil},
			{"unknown", `{"code":"other","title":"x"}`, 400, nil},
			{"twice", `{"title":"a","title":"b"}`, 400, nil},
			{"array", `[]`, 400, nil},
			{"null", `null`, 400, nil},
			{"string", `"x"`, 400, nil},
			{"trailing", `{}{}`, 400, nil},
			{"big", `{"notes":"` + strings.Repeat("n", maxBody) + `"}`, 413, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out := create(t, h, fmt.Sprintf(start, exp.Format(time.RFC3339)))
				before, tag := getLink(t, h, out.Code)
				a := mergePatch(t, h, out.Code, tc.patch)
				if a.Code != tc.status {
					t.Fatalf("PATCH %s = %d %s, want %d", tc.patch, a.Code, a.Body, tc.status)
				}
				after, tag2 := getLink(t, h, out.Code)
				wantFields := fieldsOf(t, before)
				for k, v := range tc.want {
					wantFields[k] = v
				}
				if got := fieldsOf(t, after); fmt.Sprint(got) != fmt.Sprint(wantFields) {
					t.Errorf("after PATCH %s:\n got %v\nwant %v", tc.patch, got, wantFields)
				}
				if changed := len(tc.want) > 0; changed == (tag2 == tag) {
					t.Errorf("ETag %s → %s after PATCH %s (changed fields: %v)", tag, tag2, tc.patch, tc.want)
				}
				if tc.status == 200 && a.Header.Get("ETag") != tag2 {
					t.Errorf("PATCH answered ETag %q, GET %q", a.Header.Get("ETag"), tag2)
				}
				if tc.status == 400 && !strings.Contains(a.Body, `"error"`) {
					t.Errorf("400 without an error: %s", a.Body)
				}
			})
		}
	})
}

// fieldsOf is the editable fields of an answer as compact JSON.
func fieldsOf(t *testing.T, l link.Response) map[string]string {
	t.Helper()
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range link.EditableFields {
		out[f.Name] = linktest.CompactJSON(t, all[f.Name])
	}
	return out
}

// TestAPIPatchConditions: ETags on every single-link answer, If-Match,
// and the statuses of a PATCH that cannot apply.
func TestAPIPatchConditions(t *testing.T) {
	h := newHandler(t, openTestEmbedded(t), withReadKey)
	w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/c"}`, auth()...)
	if w.Code != http.StatusCreated || w.Header().Get("ETag") != `"1"` {
		t.Fatalf("POST = %d ETag %q, want 201 \"1\"", w.Code, w.Header().Get("ETag"))
	}
	var out link.Response
	_ = json.Unmarshal(w.Body.Bytes(), &out)
	code := out.Code
	if w := serve(t, h, "HEAD", "/api/links/"+code, "", auth()...); w.Header().Get("ETag") != `"1"` {
		t.Errorf("HEAD ETag = %q, want \"1\"", w.Header().Get("ETag"))
	}
	steps := []struct {
		name   string
		patch  string
		header []string
		status int
		etag   string // after the step
	}{
		{"stale", `{"title":"a"}`, []string{"If-Match", `"7"`}, 412, `"1"`},
		{"weak never matches", `{"title":"a"}`, []string{"If-Match", `W/"1"`}, 412, `"1"`},
		{"foreign tag", `{"title":"a"}`, []string{"If-Match", `"abc"`}, 412, `"1"`},
		{"malformed", `{"title":"a"}`, []string{"If-Match", `1`}, 400, `"1"`},
		{"one of a list", `{"title":"a"}`, []string{"If-Match", `"9", "1"`}, 200, `"2"`},
		{"star", `{"title":"b"}`, []string{"If-Match", `*`}, 200, `"3"`},
		{"unconditional", `{"title":"c"}`, nil, 200, `"4"`},
		{"same again", `{"title":"c"}`, []string{"If-Match", `"4"`}, 200, `"4"`},
		{"empty", `{}`, nil, 200, `"4"`},
		{"plain json", `{"title":"d"}`, []string{"Content-Type", "application/json; charset=utf-8"}, 200, `"5"`},
		{"form", `{"title":"e"}`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, `"5"`},
		{"json-patch", `{"title":"e"}`, []string{"Content-Type", "application/json-patch+json"}, 415, `"5"`},
		{"no type", `{"title":"e"}`, []string{"Content-Type", ""}, 415, `"5"`},
		{"read key", `{"title":"e"}`, readAuth(), 403, `"5"`},
	}
	for _, st := range steps {
		a := mergePatch(t, h, code, st.patch, st.header...)
		if a.Code != st.status {
			t.Fatalf("%s: PATCH = %d %s, want %d", st.name, a.Code, a.Body, st.status)
		}
		if _, tag := getLink(t, h, code); tag != st.etag {
			t.Errorf("%s: ETag after = %s, want %s", st.name, tag, st.etag)
		}
		if !json.Valid([]byte(a.Body)) {
			t.Errorf("%s: answer is not JSON: %q", st.name, a.Body)
		}
	}
	if a := mergePatch(t, h, "nosuchcode", `{"title":"x"}`); a.Code != http.StatusNotFound {
		t.Errorf("PATCH unknown = %d, want 404", a.Code)
	}
	if w := serve(t, h, "DELETE", "/api/links/"+code, "", auth()...); w.Code != http.StatusNoContent {
		t.Fatal(w.Code)
	}
	if _, tag := getLink(t, h, code); tag != `"6"` {
		t.Errorf("ETag after DELETE = %s, want \"6\" (revocation is a change)", tag)
	}
	for _, hd := range [][]string{nil, {"If-Match", `"6"`}, {"If-Match", `"1"`}} {
		if a := mergePatch(t, h, code, `{"title":"x"}`, hd...); a.Code != http.StatusConflict {
			t.Errorf("PATCH revoked (%v) = %d %s, want 409", hd, a.Code, a.Body)
		}
	}
}

// TestAPIPatchWarning: changing the destination of a permanent redirect
// warns; other edits and temporary redirects do not.
func TestAPIPatchWarning(t *testing.T) {
	for _, status := range []int{301, 302, 307, 308} {
		h := newHandler(t, openTestEmbedded(t), func(h *Handler) { h.Status = status })
		out := create(t, h, `{"long_url":"https://example.com/w"}`)
		for _, tc := range []struct {
			patch string
			warn  bool
		}{
			{`{"redirect_status":308}`, false},
			{`{"long_url":"https://example.com/own-308"}`, true}, // the link's own status
			{`{"redirect_status":302}`, false},
			{`{"long_url":"https://example.com/w"}`, false},
			{`{"redirect_status":null}`, false},
			{`{"title":"t"}`, false},
			{`{"long_url":"https://example.com/w2"}`, status == 301 || status == 308},
			{`{"long_url":"https://example.com/w2"}`, false}, // unchanged
		} {
			a := mergePatch(t, h, out.Code, tc.patch)
			var resp patchResponse
			if err := json.Unmarshal([]byte(a.Body), &resp); err != nil || a.Code != 200 {
				t.Fatalf("status %d PATCH %s = %d %s", status, tc.patch, a.Code, a.Body)
			}
			if (resp.Warning != "") != tc.warn {
				t.Errorf("status %d PATCH %s: warning %q, want one: %v", status, tc.patch, resp.Warning, tc.warn)
			}
		}
	}
}

// TestAPIPatchRace: 50 concurrent PATCHes with one ETag, over a few
// rounds, on both stores: exactly one 200 a round, the rest 412.
func TestAPIPatchRace(t *testing.T) {
	bothStores(t, func(t *testing.T, s link.Store) {
		h := newHandler(t, s, nil)
		code := create(t, h, `{"long_url":"https://example.com/race"}`).Code
		const n = 50
		for round := 1; round <= 4; round++ {
			_, tag := getLink(t, h, code)
			statuses := make([]int, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					a := mergePatch(t, h, code, fmt.Sprintf(`{"long_url":"https://example.com/%d/%d"}`, round, i), "If-Match", tag)
					statuses[i] = a.Code
				})
			}
			close(start)
			wg.Wait()
			winner := -1
			for i, st := range statuses {
				switch {
				case st == 200 && winner >= 0:
					t.Fatalf("round %d: PATCHes %d and %d both answered 200", round, winner, i)
				case st == 200:
					winner = i
				case st != 412:
					t.Fatalf("round %d: PATCH %d = %d, want 200 or 412", round, i, st)
				}
			}
			if winner < 0 {
				t.Fatalf("round %d: no PATCH won", round)
			}
			l, _ := getLink(t, h, code)
			if want := fmt.Sprintf("https://example.com/%d/%d", round, winner); l.LongURL != want {
				t.Fatalf("round %d: long_url %q, want the winner's %q", round, l.LongURL, want)
			}
			if w := serve(t, h, "GET", "/"+code, ""); w.Header().Get("Location") != l.LongURL {
				t.Fatalf("round %d: redirect to %q, want %q", round, w.Header().Get("Location"), l.LongURL)
			}
		}
		w := serve(t, h, "GET", "/api/links/"+code+"/history", "", auth()...)
		var hist historyResponse
		if err := json.Unmarshal(w.Body.Bytes(), &hist); err != nil || len(hist.History) != 4 {
			t.Errorf("history after 4 rounds = %s, want 4 entries", w.Body)
		}
	})
}

// TestAPIHistory: the history answer, its pages, its key fingerprints and
// its parameters.
func TestAPIHistory(t *testing.T) {
	bothStores(t, func(t *testing.T, s link.Store) {
		const otherKey = "other-key-0123456789"
		h := newHandler(t, s, func(h *Handler) { withReadKey(h); h.APIKeys = append(h.APIKeys, otherKey) })
		code := create(t, h, `{"long_url":"https://example.com/h0","title":"first"}`).Code
		hist := func(query string, hd ...string) (int, historyResponse, string) {
			w := serve(t, h, "GET", "/api/links/"+code+"/history"+query, "", hd...)
			var out historyResponse
			_ = json.Unmarshal(w.Body.Bytes(), &out)
			return w.Code, out, w.Body.String()
		}
		if st, out, body := hist("", readAuth()...); st != 200 || out.History == nil || len(out.History) != 0 || out.NextCursor != nil {
			t.Errorf("history of an unedited link = %d %s, want 200 and an empty list", st, body)
		}
		before := time.Now().UTC().Add(-time.Second)
		for i := 1; i <= 5; i++ {
			hd := []string{}
			if i%2 == 0 {
				hd = []string{"Authorization", "Bearer " + otherKey}
			}
			if a := mergePatch(t, h, code, fmt.Sprintf(`{"long_url":"https://example.com/h%d"}`, i), hd...); a.Code != 200 {
				t.Fatal(a.Code, a.Body)
			}
		}
		mergePatch(t, h, code, `{"title":null,"tags":["t1"]}`)
		st, out, body := hist("?limit=4", readAuth()...)
		if st != 200 || len(out.History) != 4 || out.NextCursor == nil {
			t.Fatalf("history?limit=4 = %d %s", st, body)
		}
		if e := out.History[0]; e.Version != 7 || linktest.CompactJSON(t, e.Changes["title"].From) != `"first"` ||
			linktest.CompactJSON(t, e.Changes["title"].To) != "null" || linktest.CompactJSON(t, e.Changes["tags"].To) != `["t1"]` || len(e.Changes) != 2 {
			t.Errorf("newest entry = %+v", e)
		}
		fp := func(k string) string { d := keyDigest(k); return fmt.Sprintf("%x", d[:8]) }
		for _, e := range out.History[1:] {
			wantKey := fp(testKey)
			if (e.Version-1)%2 == 0 {
				wantKey = fp(otherKey)
			}
			if e.Key != wantKey || strings.Contains(e.Key, "key-0123") {
				t.Errorf("version %d key = %q, want %q", e.Version, e.Key, wantKey)
			}
			if e.At.Before(before) || e.At.After(time.Now().Add(time.Second)) {
				t.Errorf("version %d at %v, want about now", e.Version, e.At)
			}
		}
		_, rest, _ := hist("?limit=4&cursor="+*out.NextCursor, auth()...)
		var dests []string
		for _, e := range append(out.History, rest.History...) {
			if to := e.Changes["long_url"].To; to != nil {
				dests = append(dests, linktest.CompactJSON(t, e.Changes["long_url"].From)+">"+linktest.CompactJSON(t, to))
			}
		}
		want := []string{}
		for i := 5; i >= 1; i-- {
			want = append(want, fmt.Sprintf(`"https://example.com/h%d">"https://example.com/h%d"`, i-1, i))
		}
		if !slices.Equal(dests, want) || rest.NextCursor != nil {
			t.Errorf("past destinations over two pages = %v (next %v), want %v", dests, rest.NextCursor, want)
		}
		for _, q := range []string{"?limit=0", "?limit=501", "?limit=x", "?limit=1&limit=2", "?cursor=x", "?cursor=0", "?cursor=-1"} {
			if st, _, body := hist(q, auth()...); st != 400 || !strings.Contains(body, strings.Split(q[1:], "=")[0]) {
				t.Errorf("history%s = %d %s, want 400 naming the parameter", q, st, body)
			}
		}
		if w := serve(t, h, "GET", "/api/links/nosuch/history", "", auth()...); w.Code != 404 {
			t.Errorf("history of an unknown link = %d, want 404", w.Code)
		}
		if w := serve(t, h, "POST", "/api/links/"+code+"/history", "", auth()...); w.Code != 405 {
			t.Errorf("POST history = %d, want 405", w.Code)
		}
	})
}

// TestAPIPatchConfiguredStore: the store the handler opens itself (the
// embedded one is shared between configs behind a wrapper) edits too.
func TestAPIPatchConfiguredStore(t *testing.T) {
	h := newHandler(t, nil, func(h *Handler) { h.Path = filepath.Join(t.TempDir(), "links.db") })
	code := create(t, h, `{"long_url":"https://example.com/own"}`).Code
	if a := mergePatch(t, h, code, `{"long_url":"https://example.com/own2"}`); a.Code != http.StatusOK {
		t.Fatalf("PATCH = %d %s", a.Code, a.Body)
	}
	if w := serve(t, h, "GET", "/api/links/"+code+"/history", "", auth()...); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "own2") {
		t.Errorf("history = %d %s", w.Code, w.Body)
	}
}
