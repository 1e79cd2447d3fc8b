package shortener

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// txStores opens each store that implements TxStore, fresh for each call.
var txStores = map[string]func(t *testing.T) link.Store{
	"embedded": openTestEmbedded,
	"postgres": openTestPostgres,
}

const otherKey = "other-key-0123456789"

func idem(key string) []string { return append(auth(), "Idempotency-Key", key) }

func TestAPIIdempotencyReplay(t *testing.T) {
	for name, open := range txStores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			h := newHandler(t, s, func(h *Handler) { h.APIKeys = append(h.APIKeys, otherKey) })
			body := `{"long_url":"https://example.com/idem","title":"T"}`
			first := serve(t, h, "POST", "/api/links", body, idem("k-1")...)
			if first.Code != http.StatusCreated || first.Header().Get("Idempotent-Replayed") != "" {
				t.Fatalf("first POST = %d %s (replayed %q), want 201", first.Code, first.Body, first.Header().Get("Idempotent-Replayed"))
			}
			var l link.Response
			if err := json.Unmarshal(first.Body.Bytes(), &l); err != nil || l.Code == "" || l.LongURL != "https://example.com/idem" {
				t.Fatalf("first answer %s: %v", first.Body, err)
			}
			for range 2 {
				again := serve(t, h, "POST", "/api/links", body, idem("k-1")...)
				if again.Code != first.Code || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
					t.Errorf("replay = %d %s (replayed %q), want %d %s replayed", again.Code, again.Body, again.Header().Get("Idempotent-Replayed"), first.Code, first.Body)
				}
			}
			w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/other"}`, idem("k-1")...)
			if w.Code != http.StatusUnprocessableEntity || !strings.Contains(errorOf(t, w.Body.Bytes()), "Idempotency-Key") {
				t.Errorf("same key, other body = %d %s, want 422 naming Idempotency-Key", w.Code, w.Body)
			}
			// Another API key has its own keys.
			w = serve(t, h, "POST", "/api/links", body, "Authorization", "Bearer "+otherKey, "Idempotency-Key", "k-1")
			if w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "" || w.Body.String() == first.Body.String() {
				t.Errorf("other API key = %d %s, want a fresh 201", w.Code, w.Body)
			}
			// The same body without a key creates another link.
			if c := create(t, h, body); c.Code == l.Code {
				t.Errorf("create without a key answered the recorded link %s", c.Code)
			}
		})
	}
}

func TestAPIIdempotencyKeyHeader(t *testing.T) {
	h := newHandler(t, openTestEmbedded(t), nil)
	body := `{"long_url":"https://example.com/h"}`
	for _, key := range []string{"", strings.Repeat("k", 256), "caf\u00e9", "a\tb", "a\x7fb"} {
		w := serve(t, h, "POST", "/api/links", body, idem(key)...)
		if w.Code != http.StatusBadRequest || !strings.Contains(errorOf(t, w.Body.Bytes()), "Idempotency-Key") {
			t.Errorf("Idempotency-Key %q: %d %s, want 400 naming the header", key, w.Code, w.Body)
		}
	}
	r := serve(t, h, "POST", "/api/links", body, idem(strings.Repeat("k", 255)+"")...)
	if r.Code != http.StatusCreated {
		t.Errorf("255-byte key: %d %s, want 201", r.Code, r.Body)
	}
	// Sent twice.
	req := []string{"Authorization", "Bearer " + testKey}
	w := serveHeaders(t, h, "POST", "/api/links", body, req, http.Header{"Idempotency-Key": {"a", "b"}})
	if w.Code != http.StatusBadRequest || !strings.Contains(errorOf(t, w.Body.Bytes()), "Idempotency-Key") {
		t.Errorf("two Idempotency-Key headers: %d %s, want 400", w.Code, w.Body)
	}
}

// serveHeaders is serve with extra multi-valued headers.
func serveHeaders(t *testing.T, h *Handler, method, target, body string, header []string, extra http.Header) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, "http://sho.rt"+target, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	for k, vs := range extra {
		r.Header[k] = vs
	}
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, r, nextHandler); err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	return w
}

// A request refused by validation is answered by its key's record when it
// has one: a retry after the expiry it asked for has passed replays.
func TestAPIIdempotencyReplayAfterValidityChanges(t *testing.T) {
	for name, open := range txStores {
		t.Run(name, func(t *testing.T) {
			clk := newFakeClock(time.Now())
			h := newHandler(t, open(t), func(h *Handler) { h.now = clk.Now })
			body := fmt.Sprintf(`{"long_url":"https://example.com/e","expires_at":%q}`, clk.Now().Add(time.Minute).Format(time.RFC3339))
			first := serve(t, h, "POST", "/api/links", body, idem("exp")...)
			if first.Code != http.StatusCreated {
				t.Fatalf("first = %d %s", first.Code, first.Body)
			}
			clk.Advance(2 * time.Minute)
			again := serve(t, h, "POST", "/api/links", body, idem("exp")...)
			if again.Code != http.StatusCreated || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
				t.Errorf("retry after expiry = %d %s, want the replay of %s", again.Code, again.Body, first.Body)
			}
			if w := serve(t, h, "POST", "/api/links", body, idem("fresh")...); w.Code != http.StatusBadRequest {
				t.Errorf("fresh key, past expiry = %d %s, want 400", w.Code, w.Body)
			}
			// After 24 hours the key is forgotten.
			clk.Advance(link.IdemTTL)
			if w := serve(t, h, "POST", "/api/links", body, idem("exp")...); w.Code != http.StatusBadRequest {
				t.Errorf("retry after 24h = %d %s, want 400 (record expired)", w.Code, w.Body)
			}
		})
	}
}

// failBlocks fails NextBlock while fail is set.
type failBlocks struct {
	link.TxStore
	link.Store
	fail atomic.Bool
}

func (f *failBlocks) NextBlock(ctx context.Context, size int64) (int64, error) {
	if f.fail.Load() {
		return 0, errDown
	}
	return f.Store.NextBlock(ctx, size)
}

// A 5xx is never recorded: the retry with the same key creates.
func TestAPIIdempotency5xxNotReplayed(t *testing.T) {
	for name, open := range txStores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			f := &failBlocks{TxStore: s.(link.TxStore), Store: s}
			h := newHandler(t, f, func(h *Handler) { h.Codes = "sequential" })
			body := `{"long_url":"https://example.com/5xx"}`
			f.fail.Store(true)
			if w := serve(t, h, "POST", "/api/links", body, idem("k5")...); w.Code != http.StatusServiceUnavailable {
				t.Fatalf("with blocks failing = %d %s, want 503", w.Code, w.Body)
			}
			f.fail.Store(false)
			w := serve(t, h, "POST", "/api/links", body, idem("k5")...)
			if w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "" {
				t.Errorf("retry = %d %s (replayed %q), want a fresh 201", w.Code, w.Body, w.Header().Get("Idempotent-Replayed"))
			}
			again := serve(t, h, "POST", "/api/links", body, idem("k5")...)
			if again.Body.String() != w.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
				t.Errorf("second retry = %d %s, want the replay of %s", again.Code, again.Body, w.Body)
			}
		})
	}
}

// concurrentPOSTs sends the same POST n times at once, spread over hs.
func concurrentPOSTs(t *testing.T, hs []*Handler, n int, target, body string, header ...string) []*httptest.ResponseRecorder {
	t.Helper()
	out := make([]*httptest.ResponseRecorder, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = serve(t, hs[i%len(hs)], "POST", target, body, header...) })
	}
	wg.Wait()
	return out
}

// sameAnswers checks that every answer has the first one's status and body
// and that exactly fresh of them are not replays.
func sameAnswers(t *testing.T, ws []*httptest.ResponseRecorder, fresh int) {
	t.Helper()
	got := 0
	for i, w := range ws {
		if w.Code != ws[0].Code || w.Body.String() != ws[0].Body.String() {
			t.Errorf("answer #%d = %d %s, want %d %s", i, w.Code, w.Body, ws[0].Code, ws[0].Body)
		}
		if w.Header().Get("Idempotent-Replayed") == "" {
			got++
		}
	}
	if got != fresh {
		t.Errorf("%d answers not replayed, want %d", got, fresh)
	}
}

// Acceptance: 50 concurrent duplicate POSTs with one Idempotency-Key over
// two instances (shared PostgreSQL and Redis) create one link and all get
// the same answer.
func TestNodesIdempotentConcurrentDuplicates(t *testing.T) {
	s, pool, redisURL, prefix := sharedServices(t)
	a, b := twoNodes(t, s.Store, redisURL, prefix, nil)
	for round := range 3 {
		body := fmt.Sprintf(`{"long_url":"https://example.com/dup/%d"}`, round)
		ws := concurrentPOSTs(t, []*Handler{a, b}, 50, "http://sho.rt/api/links", body, idem(fmt.Sprintf("dup-%d", round))...)
		if ws[0].Code != http.StatusCreated {
			t.Fatalf("answer = %d %s, want 201", ws[0].Code, ws[0].Body)
		}
		sameAnswers(t, ws, 1)
	}
	if n := countLinks(t, pool); n != 3 {
		t.Errorf("%d links stored, want 3", n)
	}
}

// The same on the embedded store: two handlers sharing one store.
func TestEmbeddedIdempotentConcurrentDuplicates(t *testing.T) {
	s := openTestEmbedded(t)
	a, b := newHandler(t, s, nil), newHandler(t, s, nil)
	body := `{"long_url":"https://example.com/dup"}`
	ws := concurrentPOSTs(t, []*Handler{a, b}, 50, "http://sho.rt/api/links", body, idem("dup")...)
	if ws[0].Code != http.StatusCreated {
		t.Fatalf("answer = %d %s, want 201", ws[0].Code, ws[0].Body)
	}
	sameAnswers(t, ws, 1)
	codes, err := s.(link.CodeLister).ScanCodes(context.Background(), "", 100)
	if err != nil || len(codes) != 1 {
		t.Errorf("stored codes %v (%v), want 1", codes, err)
	}
}

// A handler that opens its own embedded store (shared across reloads)
// creates in transactions.
func TestProvisionEmbeddedIdempotent(t *testing.T) {
	h := &Handler{Path: filepath.Join(t.TempDir(), "links.db"), API: "/api", APIKeys: []string{testKey}}
	if err := provision(t, h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Cleanup() })
	body := `{"long_url":"https://example.com/own","reuse":true}`
	first := serve(t, h, "POST", "/api/links", body, idem("own")...)
	again := serve(t, h, "POST", "/api/links", body, idem("own")...)
	if first.Code != http.StatusCreated || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("POST = %d %s, then %d %s; want 201 and its replay", first.Code, first.Body, again.Code, again.Body)
	}
	if w := serve(t, h, "POST", "/api/links/batch", `{"links":[`+body+`]}`, auth()...); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"status":200`) {
		t.Errorf("batch = %d %s, want 200 with the reused link", w.Code, w.Body)
	}
}
