package shortener

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAPIWordsReservedAsCodes: no link is created or imported with a fixed
// word of the API as its code, so PATCH /links/export cannot edit a link
// named export: the paths mean one thing, as the document lists them.
func TestAPIWordsReservedAsCodes(t *testing.T) {
	h := newHandler(t, openTestEmbedded(t), nil)
	for _, word := range []string{"export", "batch", "stats", "links", "history"} {
		w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/","code":"`+word+`"}`, auth()...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "reserved: a word of the API") {
			t.Errorf("create code %q = %d %s, want 400 reserved", word, w.Code, w.Body)
		}
	}
	w := serve(t, h, "POST", "/api/links/batch", `{"mode":"import","links":[{"code":"qr","long_url":"https://example.com/"}]}`, auth()...)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"result":"refused"`) || !strings.Contains(w.Body.String(), "reserved") {
		t.Errorf("import code qr = %d %s, want refused as reserved", w.Code, w.Body)
	}
	for _, method := range []string{"PATCH", "DELETE", "POST", "PUT"} {
		w := serve(t, h, method, "/api/links/export", `{"title":"x"}`, auth()...)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /api/links/export = %d Allow %q, want 405 GET, HEAD", method, w.Code, w.Header().Get("Allow"))
		}
	}
}

// TestAPIEmptyParameterRefused: a parameter of the API given empty is a
// 400 naming it on every endpoint, never read as absent; a parameter the
// API does not read is ignored, empty or not.
func TestAPIEmptyParameterRefused(t *testing.T) {
	h, _ := clickHandler(t, time.Now(), nil)
	code := create(t, h, `{"long_url":"https://example.com/e"}`).Code
	for _, target := range []string{
		"/api/links?tag=", "/api/links?status=", "/api/links?q=", "/api/links?cursor=",
		"/api/links/export?format=", "/api/links/" + code + "/qr?level=", "/api/links/" + code + "/stats?format=",
		"/api/links/" + code + "/stats?from=", "/api/stats?group_by=", "/api/links/" + code + "/history?limit=",
	} {
		name := target[strings.IndexByte(target, '?')+1 : len(target)-1]
		w := serve(t, h, "GET", target, "", auth()...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"`+name+`: empty`) {
			t.Errorf("GET %s = %d %s, want 400 naming %s", target, w.Code, w.Body, name)
		}
	}
	if w := serve(t, h, "GET", "/api/links/"+code+"/stats?utm_source=&_=", "", auth()...); w.Code != http.StatusOK {
		t.Errorf("unknown empty parameters = %d %s, want 200", w.Code, w.Body)
	}
}

// TestBatchBodyFitsOneSchema: a create batch is links only; dry_run
// belongs to an import, given false as much as true.
func TestBatchBodyFitsOneSchema(t *testing.T) {
	h := newHandler(t, newMemStore(), nil)
	for _, body := range []string{
		`{"dry_run":false,"links":[{"long_url":"https://example.com/a"}]}`,
		`{"dry_run":true,"links":[{"long_url":"https://example.com/a"}]}`,
	} {
		w := serve(t, h, "POST", "/api/links/batch", body, auth()...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "dry_run: only with mode import") {
			t.Errorf("POST batch %s = %d %s, want 400 naming dry_run", body, w.Code, w.Body)
		}
	}
}
