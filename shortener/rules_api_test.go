package shortener

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/link/linktest"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// TestAPIRulesCreate: on both stores, a link created with every rule
// answers them on create and on GET (remaining_clicks with max_clicks) and
// the store holds them; a link without rules answers each as null.
func TestAPIRulesCreate(t *testing.T) {
	for name, open := range metaStores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			h, _ := metaHandler(t, s)
			out := create(t, h, `{"long_url":"https://example.com/r","code":"rules-1","redirect_status":307,`+
				`"valid_from":"2030-01-02T03:04:05.123456789+02:00","expires_at":"2031-01-01T00:00:00Z","max_clicks":100,"forward_query":false}`)
			w := serve(t, h, "GET", "/api/links/rules-1", "", auth()...)
			var got link.Response
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil {
				t.Fatalf("GET = %d %s", w.Code, w.Body)
			}
			want := time.Date(2030, 1, 2, 1, 4, 5, 123456000, time.UTC)
			for what, r := range map[string]link.RuleResponse{"create": out.RuleResponse, "GET": got.RuleResponse} {
				if r.RedirectStatus == nil || *r.RedirectStatus != 307 || r.ValidFrom == nil || !r.ValidFrom.Equal(want) ||
					r.MaxClicks == nil || *r.MaxClicks != 100 || r.RemainingClicks == nil || *r.RemainingClicks != 100 ||
					r.ForwardQuery == nil || *r.ForwardQuery {
					t.Errorf("%s: rules %s, want 307, %v, 100 (100 left), false", what, mustJSON(r), want)
				}
			}
			l, err := s.Get(context.Background(), "rules-1")
			off := false
			if err != nil {
				t.Fatal(err)
			}
			linktest.AssertRules(t, l, link.Link{Code: "rules-1", RedirectStatus: 307, ValidFrom: want, MaxClicks: 100, ForwardQuery: &off})

			w = serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/plain","redirect_status":null}`, auth()...)
			var raw map[string]json.RawMessage
			if w.Code != http.StatusCreated || json.Unmarshal(w.Body.Bytes(), &raw) != nil {
				t.Fatalf("create without rules = %d %s", w.Code, w.Body)
			}
			for _, f := range []string{"redirect_status", "valid_from", "max_clicks", "forward_query", "remaining_clicks"} {
				if v, ok := raw[f]; !ok || string(v) != "null" {
					t.Errorf("%s = %s (present %v), want null like title: %s", f, v, ok, w.Body)
				}
			}
		})
	}
}

// TestAPIRulesBounds: each rule at its bounds is accepted; each bad value
// gets 400 naming the field, with nothing stored.
func TestAPIRulesBounds(t *testing.T) {
	cases := []struct {
		name, fields string
		field        string // "": accepted
	}{
		{"status 301", `"redirect_status":301`, ""},
		{"status 302", `"redirect_status":302`, ""},
		{"status 308", `"redirect_status":308`, ""},
		{"status 0", `"redirect_status":0`, "redirect_status"},
		{"status 303", `"redirect_status":303`, "redirect_status"},
		{"status 200", `"redirect_status":200`, "redirect_status"},
		{"status string", `"redirect_status":"301"`, "redirect_status"},
		{"status fraction", `"redirect_status":301.5`, "redirect_status"},
		{"status huge", `"redirect_status":1e400`, "redirect_status"},
		{"max 1", `"max_clicks":1`, ""},
		{"max bound", `"max_clicks":1000000000000`, ""},
		{"max 0", `"max_clicks":0`, "max_clicks"},
		{"max negative", `"max_clicks":-1`, "max_clicks"},
		{"max over", `"max_clicks":1000000000001`, "max_clicks"},
		{"max overflow", `"max_clicks":9223372036854775808`, "max_clicks"},
		{"max exponent", `"max_clicks":1e3`, "max_clicks"},
		{"forward true", `"forward_query":true`, ""},
		{"forward string", `"forward_query":"on"`, "forward_query"},
		{"forward number", `"forward_query":1`, "forward_query"},
		{"valid_from past", `"valid_from":"2001-01-01T00:00:00Z"`, ""},
		{"valid_from first", `"valid_from":"2000-01-01T00:00:00Z"`, ""},
		{"valid_from early", `"valid_from":"1999-12-31T23:59:59Z"`, "valid_from"},
		{"valid_from epoch", `"valid_from":"1970-01-01T00:00:00Z"`, "valid_from"},
		{"valid_from no zone", `"valid_from":"2030-01-01T00:00:00"`, "valid_from"},
		{"valid_from date", `"valid_from":"2030-01-01"`, "valid_from"},
		{"valid_from number", `"valid_from":1893456000`, "valid_from"},
		{"valid_from before expiry", `"valid_from":"2030-01-01T00:00:00Z","expires_at":"2030-01-01T00:00:01Z"`, ""},
		{"valid_from at expiry", `"valid_from":"2030-01-01T00:00:00Z","expires_at":"2030-01-01T00:00:00Z"`, "valid_from"},
		{"valid_from after expiry", `"valid_from":"2031-01-01T00:00:00Z","expires_at":"2030-01-01T00:00:00Z"`, "valid_from"},
	}
	for name, open := range metaStores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			h, _ := metaHandler(t, s)
			for i, tc := range cases {
				code := fmt.Sprintf("rule-%02d", i)
				body := fmt.Sprintf(`{"long_url":"https://example.com/%d","code":%q,%s}`, i, code, tc.fields)
				w := serve(t, h, "POST", "/api/links", body, auth()...)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				stored, err := s.Get(ctx, code)
				cancel()
				if tc.field == "" {
					if w.Code != http.StatusCreated || err != nil {
						t.Errorf("%s: %d %s (stored: %v), want 201", tc.name, w.Code, w.Body, err)
					}
					continue
				}
				if w.Code != http.StatusBadRequest || !strings.Contains(errorOf(t, w.Body.Bytes()), tc.field) {
					t.Errorf("%s: %d %s, want 400 naming %s", tc.name, w.Code, w.Body, tc.field)
				}
				if !errors.Is(err, link.ErrNotFound) {
					t.Errorf("%s: refused, but the store holds %+v, %v", tc.name, stored, err)
				}
			}
		})
	}
}

// TestRulesOldLinks: links written before rules existed (a row an older
// Version inserts, a record an older version encoded) read back with none.
func TestRulesOldLinks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	noRules := func(t *testing.T, l link.Link, err error) {
		t.Helper()
		if err != nil || l.LongURL != "https://example.com/old" {
			t.Fatalf("Get(old1) = %+v, %v", l, err)
		}
		linktest.AssertRules(t, l, link.Link{Code: "old1"})
	}
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
		noRules(t, l, err)
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
			return b.Put([]byte("old1"), []byte(`{"u":"https://example.com/old","c":1764000000000000,"t":"x"}`))
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
		noRules(t, l, err)
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
