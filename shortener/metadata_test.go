package shortener

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// metaStores opens each real store, empty, for one test.
var metaStores = map[string]func(t *testing.T) link.Store{
	"postgres": openTestPostgres,
	"embedded": openTestEmbedded,
}

// metaHandler provisions a handler on store s with the shared test Redis.
func metaHandler(t *testing.T, s link.Store) (*Handler, string) {
	t.Helper()
	_, prefix := testenv.Redis(t)
	url := testenv.RedisURL(t)
	return newHandler(t, s, func(h *Handler) {
		h.Redis = &redispool.Config{URL: url, KeyPrefix: prefix}
	}), prefix
}

// TestAPIMetadata: on both stores with Redis, a link created with title,
// tags and notes answers them on create and on GET; a link without any
// answers them as null; redirects are unchanged, and the Redis entry
// redirects read is the one earlier versions wrote and read.
func TestAPIMetadata(t *testing.T) {
	for name, open := range metaStores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			h, prefix := metaHandler(t, s)
			body := `{"long_url":"https://example.com/flyer","code":"flyer-1","title":"Spring sale — «flyer» 日本","tags":["print","q2:2026"],"notes":"Printed 500.\nReprint in May."}`
			out := create(t, h, body)
			var req link.CreateRequest
			if err := json.Unmarshal([]byte(body), &req); err != nil {
				t.Fatal(err)
			}
			assertMetadata(t, "create", out, req)
			w := serve(t, h, "GET", "/api/links/flyer-1", "", auth()...)
			var got link.Response
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil {
				t.Fatalf("GET = %d %s", w.Code, w.Body)
			}
			assertMetadata(t, "GET", got, req)

			rdb, _ := testenv.Redis(t)
			if v, err := rdb.Get(context.Background(), prefix+":l:flyer-1").Result(); err != nil || v != "L0|https://example.com/flyer" {
				t.Errorf("redis entry = %q, %v, want %q (no metadata: the redirect's entry)", v, err, "L0|https://example.com/flyer")
			}
			if r := serve(t, h, "GET", "/flyer-1", ""); r.Code != http.StatusFound || r.Header().Get("Location") != "https://example.com/flyer" {
				t.Errorf("redirect = %d %q", r.Code, r.Header().Get("Location"))
			}

			w = serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/plain","tags":[]}`, auth()...)
			var raw map[string]json.RawMessage
			if w.Code != http.StatusCreated || json.Unmarshal(w.Body.Bytes(), &raw) != nil {
				t.Fatalf("create without metadata = %d %s", w.Code, w.Body)
			}
			for _, f := range []string{"title", "tags", "notes", "expires_at"} {
				if v, ok := raw[f]; !ok || string(v) != "null" {
					t.Errorf("%s = %s (present %v), want null like expires_at: %s", f, v, ok, w.Body)
				}
			}
		})
	}
}

// assertMetadata compares the metadata of an answer with the request's.
func assertMetadata(t *testing.T, what string, out link.Response, req link.CreateRequest) {
	t.Helper()
	var title, notes string
	if out.Title != nil {
		title = *out.Title
	}
	if out.Notes != nil {
		notes = *out.Notes
	}
	if title != req.Title || !slices.Equal(out.Tags, link.TagsOrNil(req.Tags)) || notes != req.Notes {
		t.Errorf("%s: title %q tags %q notes %q, want %q %q %q", what, title, out.Tags, notes, req.Title, req.Tags, req.Notes)
	}
}

// TestAPIMetadataBounds: each bound at its limit is accepted and returned
// equal; one past it, and each refused character, gets 400 naming the
// field, with nothing stored. Both stores, with Redis.
func TestAPIMetadataBounds(t *testing.T) {
	tags := func(n, l int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%q", fmt.Sprintf("%03d", i)+strings.Repeat("t", l-3))
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	cases := []struct {
		name, fields string
		field        string // "": accepted
	}{
		{"title at 200", `"title":"` + strings.Repeat("é", 200) + `"`, ""},
		{"title at 201", `"title":"` + strings.Repeat("é", 201) + `"`, "title"},
		{"title emoji at 200", `"title":"` + strings.Repeat("👍", 200) + `"`, ""},
		{"title newline", `"title":"a\nb"`, "title"},
		{"title tab", `"title":"a\tb"`, "title"},
		{"title nul", `"title":"a\u0000b"`, "title"},
		{"title escape", `"title":"a\u001b[31mb"`, "title"},
		{"title c1", `"title":"a\u0085b"`, "title"},
		{"title rlo", `"title":"invoice\u202Efdp.exe"`, "title"},
		{"title isolate", `"title":"a\u2066b"`, "title"},
		{"title rlm", `"title":"a\u200Fb"`, "title"},
		{"title line separator", `"title":"a\u2028b"`, "title"},
		{"title invalid utf-8", `"title":"a` + "\xff\xfe" + `b"`, "title"},
		{"title lone surrogate", `"title":"a\ud800b"`, ""}, // JSON decoding makes it U+FFFD, valid
		{"tags 20", `"tags":` + tags(20, 5), ""},
		{"tags 21", `"tags":` + tags(21, 5), "tags"},
		{"tag 50", `"tags":` + tags(1, 50), ""},
		{"tag 51", `"tags":` + tags(1, 51), "tags[0]"},
		{"tag empty", `"tags":["ok",""]`, "tags[1]"},
		{"tag space", `"tags":["a b"]`, "tags[0]"},
		{"tag slash", `"tags":["a/b"]`, "tags[0]"},
		{"tag comma", `"tags":["a,b"]`, "tags[0]"},
		{"tag non-ascii", `"tags":["café"]`, "tags[0]"},
		{"tag duplicate", `"tags":["x","y","x"]`, "tags[2]"},
		{"tags differing in case", `"tags":["Print","print"]`, ""},
		{"tags not strings", `"tags":[1]`, "tags"},
		{"tags not a list", `"tags":"a"`, "tags"},
		{"notes at 2000", `"notes":"` + strings.Repeat("日", 2000) + `"`, ""},
		{"notes at 2001", `"notes":"` + strings.Repeat("日", 2001) + `"`, "notes"},
		{"notes lines", `"notes":"one\ntwo\r\nthree\tfour"`, ""},
		{"notes nul", `"notes":"a\u0000b"`, "notes"},
		{"notes bidi", `"notes":"a\u202Eb"`, "notes"},
		{"notes invalid utf-8", `"notes":"` + "\xc3" + `"`, "notes"},
	}
	for name, open := range metaStores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			h, _ := metaHandler(t, s)
			for i, tc := range cases {
				code := fmt.Sprintf("bound-%02d", i)
				body := fmt.Sprintf(`{"long_url":"https://example.com/%d","code":%q,%s}`, i, code, tc.fields)
				w := serve(t, h, "POST", "/api/links", body, auth()...)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				stored, err := s.Get(ctx, code)
				cancel()
				if tc.field != "" {
					if w.Code != http.StatusBadRequest || !strings.Contains(errorOf(t, w.Body.Bytes()), tc.field) {
						t.Errorf("%s: %d %s, want 400 naming %s", tc.name, w.Code, w.Body, tc.field)
					}
					if !errors.Is(err, link.ErrNotFound) {
						t.Errorf("%s: refused, but the store holds %+v, %v", tc.name, stored, err)
					}
					continue
				}
				var out link.Response
				if w.Code != http.StatusCreated || json.Unmarshal(w.Body.Bytes(), &out) != nil {
					t.Errorf("%s: %d %s, want 201", tc.name, w.Code, w.Body)
					continue
				}
				var req link.CreateRequest
				if err := json.Unmarshal([]byte(body), &req); err != nil {
					t.Fatal(err)
				}
				assertMetadata(t, tc.name, out, req)
				if err != nil || stored.Title != req.Title || !slices.Equal(stored.Tags, link.TagsOrNil(req.Tags)) || stored.Notes != req.Notes {
					t.Errorf("%s: stored %+v, %v", tc.name, stored, err)
				}
			}
		})
	}
}

// TestMetadataOldLinks: links written before metadata existed (a row an
// older version inserts, a record an older version encoded) read back with
// none.
func TestMetadataOldLinks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("postgres", func(t *testing.T) {
		pool := testPool(t, testenv.Postgres(t), pgpool.Settings{})
		s, err := store.OpenPostgres(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO shortener_links (code, long_url) VALUES ('old1', 'https://example.com/old')`); err != nil {
			t.Fatal(err)
		}
		l, err := s.Get(ctx, "old1")
		if err != nil || l.LongURL != "https://example.com/old" || l.Title != "" || l.Tags != nil || l.Notes != "" {
			t.Errorf("Get(old1) = %+v, %v, want the link without metadata", l, err)
		}
	})
	t.Run("embedded", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "old.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(store.EmbeddedLinks)
			if err != nil {
				return err
			}
			return b.Put([]byte("old1"), []byte(`{"u":"https://example.com/old","c":1764000000000000}`))
		})
		if err != nil || db.Close() != nil {
			t.Fatal(err)
		}
		s, err := store.OpenEmbedded(path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		l, err := s.Get(ctx, "old1")
		if err != nil || l.LongURL != "https://example.com/old" || l.Title != "" || l.Tags != nil || l.Notes != "" {
			t.Errorf("Get(old1) = %+v, %v, want the link without metadata", l, err)
		}
	})
}
