package shortener

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

const readKey = "read-key-0123456789"

func readAuth() []string { return []string{"Authorization", "Bearer " + readKey} }

// withReadKey adds readKey as an api_read_key.
func withReadKey(h *Handler) { h.APIReadKeys = []string{readKey} }

// readKeyScenario drives one read key through every endpoint of the API on
// h (and other, a second instance on the same store, or h again): reads
// answer, writes get 403 and change nothing, a wrong key stays 401 and the
// full key still does everything. linksTo counts the stored links to a URL.
func readKeyScenario(t *testing.T, h, other *Handler, linksTo func(long string) int) {
	t.Helper()
	long := fmt.Sprintf("https://example.com/readkey/%d", time.Now().UnixNano())
	created := create(t, h, fmt.Sprintf(`{"long_url":%q}`, long))
	path := "/api/links/" + created.Code

	for _, tc := range []struct{ method, target string }{
		{"GET", path}, {"HEAD", path}, {"GET", path + "/stats"},
	} {
		if w := serve(t, h, tc.method, tc.target, "", readAuth()...); w.Code != http.StatusOK {
			t.Errorf("read key: %s %s = %d %s, want 200", tc.method, tc.target, w.Code, w.Body)
		}
	}
	var got link.Response
	w := serve(t, h, "GET", path, "", readAuth()...)
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.LongURL != long || got.RevokedAt != nil {
		t.Errorf("read key: GET %s = %s (%v), want the live created to %s", path, w.Body, err, long)
	}

	custom := fmt.Sprintf("ro%d", time.Now().UnixNano()%1e9)
	for _, tc := range []struct{ method, target, body string }{
		{"POST", "/api/links", fmt.Sprintf(`{"long_url":%q}`, long)},
		{"POST", "/api/links", fmt.Sprintf(`{"long_url":%q,"code":%q}`, long, custom)},
		{"POST", "/api/links", fmt.Sprintf(`{"long_url":%q,"codes":"sequential"}`, long)},
		{"DELETE", path, ""},
		{"PATCH", path, `{"long_url":"https://example.com/other"}`},
	} {
		w := serve(t, h, tc.method, tc.target, tc.body, readAuth()...)
		if w.Code != http.StatusForbidden {
			t.Errorf("read key: %s %s = %d %s, want 403", tc.method, tc.target, w.Code, w.Body)
			continue
		}
		if msg := errorOf(t, w.Body.Bytes()); !strings.Contains(msg, "read-only") {
			t.Errorf("read key: %s %s: error %q does not say the key is read-only", tc.method, tc.target, msg)
		}
		if a := w.Header().Get("WWW-Authenticate"); !strings.Contains(a, `error="insufficient_scope"`) {
			t.Errorf("read key: %s %s: WWW-Authenticate %q, want insufficient_scope", tc.method, tc.target, a)
		}
	}
	if n := linksTo(long); n != 1 {
		t.Errorf("after the read key's POSTs %d links to %s are stored, want 1", n, long)
	}
	if w := serve(t, h, "GET", "/api/links/"+custom, "", auth()...); w.Code != http.StatusNotFound {
		t.Errorf("custom code of a refused POST: GET = %d, want 404", w.Code)
	}
	for _, n := range []*Handler{h, other} {
		if w := serve(t, n, "GET", "/"+created.Code, ""); w.Code != http.StatusFound || w.Header().Get("Location") != long {
			t.Errorf("after the read key's DELETE: GET /%s = %d %q, want 302 to %s", created.Code, w.Code, w.Header().Get("Location"), long)
		}
	}

	for _, m := range []string{"GET", "POST", "DELETE"} {
		w := serve(t, h, m, path, "", "Authorization", "Bearer "+readKey+"x")
		if w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != `Bearer realm="shortener"` {
			t.Errorf("wrong key: %s = %d %q, want 401", m, w.Code, w.Header().Get("WWW-Authenticate"))
		}
	}

	if w := serve(t, h, "GET", path, "", auth()...); w.Code != http.StatusOK {
		t.Errorf("full key: GET = %d, want 200", w.Code)
	}
	if w := serve(t, h, "DELETE", path, "", auth()...); w.Code != http.StatusNoContent {
		t.Errorf("full key: DELETE = %d %s, want 204", w.Code, w.Body)
	}
	eventually(t, 5*time.Second, "the revoked created answers 410 on every instance", func() bool {
		return serve(t, h, "GET", "/"+created.Code, "").Code == http.StatusGone &&
			serve(t, other, "GET", "/"+created.Code, "").Code == http.StatusGone
	})
}

func TestAPIReadKeyMemory(t *testing.T) {
	h, s := clickHandler(t, time.Now(), withReadKey)
	readKeyScenario(t, h, h, func(long string) int {
		links, _ := s.memStore.snapshot()
		n := 0
		for _, l := range links {
			if l.LongURL == long {
				n++
			}
		}
		return n
	})
}

// Two instances on real PostgreSQL and Redis: a refused DELETE leaves the
// link served by the other instance too.
func TestAPIReadKeyNodes(t *testing.T) {
	s, pool, redisURL, prefix := sharedServices(t)
	a, b := twoNodes(t, s.Store, redisURL, prefix, withReadKey)
	readKeyScenario(t, a, b, func(long string) int {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM shortener_links WHERE long_url = $1`, long).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}

// An API with read keys only loads and reads, and creates nothing.
func TestAPIReadKeysOnly(t *testing.T) {
	s := newMemStore()
	if err := s.Create(context.Background(), link.Link{Code: "given1", LongURL: "https://example.com/g", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, s, func(h *Handler) { h.APIKeys = nil; withReadKey(h) })
	if w := serve(t, h, "GET", "/api/links/given1", "", readAuth()...); w.Code != http.StatusOK {
		t.Errorf("GET = %d %s, want 200", w.Code, w.Body)
	}
	if w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/"}`, readAuth()...); w.Code != http.StatusForbidden {
		t.Errorf("POST = %d %s, want 403", w.Code, w.Body)
	}
	if w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/"}`, auth()...); w.Code != http.StatusUnauthorized {
		t.Errorf("POST with a key that is not configured = %d, want 401", w.Code)
	}
	if s.len() != 1 {
		t.Errorf("%d links stored, want 1", s.len())
	}
}

// snapshot copies what a memStore holds.
func (s *memStore) snapshot() (map[string]link.Link, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.links), s.seq
}

// FuzzAPIReadKey sends any method, path and body with a read key: no
// request changes the store, only GET and HEAD may succeed, and every
// refusal is a JSON error.
func FuzzAPIReadKey(f *testing.F) {
	for _, seed := range []struct {
		method     uint8
		path, body string
	}{
		{0, "links/seed001", ""}, {1, "links/seed001", ""}, {0, "links/seed001/stats", ""},
		{2, "links", `{"long_url":"https://example.com/"}`},
		{2, "links", `{"long_url":"https://example.com/","code":"fresh-code"}`},
		{2, "links", `{"long_url":"https://example.com/","codes":"sequential"}`},
		{3, "links/seed001", ""}, {4, "links/seed001", `{"long_url":"https://example.com/x"}`},
		{5, "links/seed001", ""}, {6, "links", ""}, {2, "links/batch", `{"links":[{"long_url":"https://example.com/"}]}`},
		{7, "links/seed001", ""}, {2, "", ""}, {0, "links/export", ""},
	} {
		f.Add(seed.method, seed.path, seed.body)
	}
	s := newClickMemStore()
	if err := s.Create(context.Background(), link.Link{Code: "seed001", LongURL: "https://example.com/s", CreatedAt: time.Now()}); err != nil {
		f.Fatal(err)
	}
	h := newHandler(f, s, withReadKey)
	methods := []string{"GET", "HEAD", "POST", "DELETE", "PATCH", "PUT", "OPTIONS", "BATCH"}
	f.Fuzz(func(t *testing.T, m uint8, path, body string) {
		method := methods[int(m)%len(methods)]
		segs := strings.Split(path, "/")
		for i := range segs {
			segs[i] = url.PathEscape(segs[i])
		}
		target := "/api/" + strings.Join(segs, "/")
		before, seq := s.memStore.snapshot()
		w := serve(t, h, method, target, body, readAuth()...)
		after, seqAfter := s.memStore.snapshot()
		if !reflect.DeepEqual(before, after) || seq != seqAfter {
			t.Fatalf("%s %s %q with a read key changed the store", method, target, body)
		}
		if method != "GET" && method != "HEAD" && w.Code != http.StatusForbidden {
			t.Fatalf("%s %s with a read key = %d %s, want 403", method, target, w.Code, w.Body)
		}
		if w.Code >= 400 && method != "HEAD" {
			var e map[string]string
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e["error"] == "" {
				t.Fatalf("%s %s = %d, body %q is not a JSON error", method, target, w.Code, w.Body)
			}
		}
	})
}
