package shortener

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// FuzzAPIBatch sends any body to POST /api/links/batch on the embedded
// store: never a 5xx; a 200 holds one result per item in order, each 201
// or 200 with a stored link or a 4xx with an error; any other answer is a
// 400 or 413 that stores nothing. Sent again with the same
// Idempotency-Key, the answer is replayed byte for byte.
func FuzzAPIBatch(f *testing.F) {
	for _, seed := range []string{
		`{"links":[{"long_url":"https://example.com/a"}]}`,
		`{"links":[{"long_url":"https://example.com/a","reuse":true},{"long_url":"https://example.com/a","reuse":true}]}`,
		`{"links":[{"long_url":"https://example.com/","code":"x-code"},{"long_url":"https://example.com/","code":"x-code"}]}`,
		`{"links":[{"long_url":"javascript:alert(1)"},{"long_url":1},[],null,"x",{"extra":1}]}`,
		`{"links":[{"long_url":"https://example.com/","codes":"sequential","title":"日本","tags":["a"]}]}`,
		`{"links":[]}`, `{"links":null}`, `{}`, `[]`, ``, `{"links":[{}]}x`,
		"{\"links\":[{\"long_url\":\"https://example.com/\",\"title\":\"\xff\"}]}",
	} {
		f.Add(seed, "k")
	}
	s := openFuzzEmbedded(f)
	h := newHandler(f, s, nil)
	f.Fuzz(func(t *testing.T, body, key string) {
		// A fresh key per input: the same key with another body is 422.
		key = fmt.Sprintf("b-%x", sha256.Sum256([]byte(key+"\x00"+body)))
		w := serve(t, h, "POST", "/api/links/batch", body, idem(key)...)
		if w.Code >= 500 || !json.Valid(w.Body.Bytes()) {
			t.Fatalf("body %q: %d %s", body, w.Code, w.Body)
		}
		if w.Code == http.StatusOK {
			checkBatchAnswer(t, h, body, w.Body.Bytes())
		} else if w.Code != http.StatusBadRequest && w.Code != http.StatusRequestEntityTooLarge && w.Code != http.StatusUnprocessableEntity {
			t.Fatalf("body %q: status %d %s", body, w.Code, w.Body)
		}
		again := serve(t, h, "POST", "/api/links/batch", body, idem(key)...)
		if w.Code == http.StatusOK && (again.Code != w.Code || again.Body.String() != w.Body.String() || again.Header().Get("Idempotent-Replayed") != "true") {
			t.Fatalf("body %q: replay %d %s, want %d %s", body, again.Code, again.Body, w.Code, w.Body)
		}
	})
}

// checkBatchAnswer checks a 200 batch answer against its body.
func checkBatchAnswer(t *testing.T, h *Handler, body string, answer []byte) {
	t.Helper()
	var req batchRequest
	var out batchAnswer
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("body %q answered 200 but does not decode: %v", body, err)
	}
	if err := json.Unmarshal(answer, &out); err != nil || len(out.Results) != len(req.Links) {
		t.Fatalf("body %q: %d results for %d items (%v)", body, len(out.Results), len(req.Links), err)
	}
	for i, r := range out.Results {
		switch {
		case r.Status == http.StatusCreated || r.Status == http.StatusOK:
			l, err := h.store.Get(t.Context(), r.Link.Code)
			if err != nil || l.LongURL != r.Link.LongURL {
				t.Fatalf("body %q item %d: answered %+v, stored %+v %v", body, i, r.Link, l, err)
			}
		case r.Status >= 400 && r.Status < 500 && r.Error != "" && r.Link == nil:
		default:
			t.Fatalf("body %q item %d: %+v", body, i, r)
		}
	}
}

// FuzzIdempotencyKey sends any Idempotency-Key: a key the header rules
// refuse gets 400 naming the header and stores nothing; an accepted key
// creates once and replays the same answer.
func FuzzIdempotencyKey(f *testing.F) {
	for _, seed := range []string{"k", "", " ", "a b", strings.Repeat("x", 255), strings.Repeat("x", 256), "é", "\x00", "\x7f", "a\r\nb"} {
		f.Add(seed)
	}
	s := openFuzzEmbedded(f)
	h := newHandler(f, s, nil)
	f.Fuzz(func(t *testing.T, key string) {
		valid := key != "" && len(key) <= maxIdemKey
		for i := 0; i < len(key); i++ {
			valid = valid && key[i] >= 0x20 && key[i] <= 0x7e
		}
		body := `{"long_url":"https://example.com/fuzz"}`
		r := httpRequestWithKey(key)
		_, err := idemKey(r)
		if (err == nil) != valid {
			t.Fatalf("idemKey(%q) = %v, want valid %v", key, err, valid)
		}
		if !valid {
			return
		}
		w := serve(t, h, "POST", "/api/links", body, idem(key)...)
		again := serve(t, h, "POST", "/api/links", body, idem(key)...)
		if w.Code != http.StatusCreated || again.Code != w.Code || again.Body.String() != w.Body.String() {
			t.Fatalf("key %q: %d %s then %d %s, want 201 replayed", key, w.Code, w.Body, again.Code, again.Body)
		}
	})
}

// openFuzzEmbedded opens an embedded store for a fuzz target.
func openFuzzEmbedded(f *testing.F) *store.EmbeddedStore {
	s, err := store.OpenEmbedded(filepath.Join(f.TempDir(), "shortener.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	return s
}

func httpRequestWithKey(key string) *http.Request {
	return &http.Request{Header: http.Header{"Idempotency-Key": {key}}}
}
