package shortener

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// FuzzImportItem: any bytes as one import item are refused naming a field
// of the item (or the item as a whole), or give a link within every bound
// of the import; and that link, shown as an import item (the shape of a
// conflict's existing link and of an export line), imports as itself.
func FuzzImportItem(f *testing.F) {
	for _, it := range importItems {
		f.Add([]byte(it.item))
	}
	for _, seed := range []string{
		`{"code":"x","long_url":"https://example.com/","clicks":1000000000000,"created_at":"1990-01-01T00:00:00Z","expires_at":"9999-12-31T23:59:59Z"}`,
		`{"code":"x","long_url":"https://example.com/","max_clicks":5,"remaining_clicks":0,"valid_from":"2001-01-01T00:00:00Z"}`,
		`{"code":"x","long_url":"https://example.com/","remaining_clicks":1}`,
		`{"code":"x","long_url":"https://example.com/","title":null,"tags":null,"notes":null,"expires_at":null,"clicks":null}`,
		`{"code":"x","long_url":"https://example.com/","code":"y"}`,
		"{\"code\":\"x\",\"long_url\":\"https://example.com/\",\"title\":\"\xff\"}",
		`{"code":"` + string(make([]byte, 70)) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	h := newHandler(f, newMemStore(), nil)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	fields := map[string]bool{"": true, "clicks": true, "remaining_clicks": true, "hourly": true}
	for _, name := range []string{"code", "short_url", "long_url", "created_at", "expires_at", "revoked_at", "title", "tags", "notes",
		"redirect_status", "valid_from", "max_clicks", "forward_query"} {
		fields[name] = true
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := httptest.NewRequest("POST", "http://sho.rt/api/links/batch", nil)
		l, err := h.judgeImportItem(r, raw, now)
		if err != nil {
			ir, ok := err.(importRefusal)
			if !ok || ir.reason == "" || !fields[ir.field] && !bytes.Contains(raw, []byte(`"`+ir.field+`"`)) {
				t.Fatalf("%q refused with %#v", raw, err)
			}
			return
		}
		if !link.ValidLookupCode(l.Code) || l.Baseline < 0 || l.Baseline > link.MaxBaseline ||
			l.CreatedAt.Before(minImportTime) || l.CreatedAt.After(now.Add(importSkew)) ||
			!l.ExpiresAt.IsZero() && !l.ExpiresAt.After(l.CreatedAt) ||
			!l.RevokedAt.IsZero() && (l.RevokedAt.Before(l.CreatedAt) || l.RevokedAt.After(now.Add(importSkew))) ||
			l.ClicksServed < 0 || l.ClicksServed > l.MaxClicks || store.CheckNewLink(l.Link) != nil {
			t.Fatalf("%q accepted out of bounds: %+v", raw, l)
		}
		shown, err := json.Marshal(struct {
			Code string `json:"code"`
			*link.ImportedLink
		}{l.Code, importedOf(l)})
		if err != nil {
			t.Fatal(err)
		}
		again, err := h.judgeImportItem(r, shown, now)
		if err != nil {
			t.Fatalf("%s (from %q) refused: %v", shown, raw, err)
		}
		if again.Code != l.Code || again.LongURL != l.LongURL || !again.CreatedAt.Equal(l.CreatedAt) || !again.ExpiresAt.Equal(l.ExpiresAt) ||
			!again.RevokedAt.Equal(l.RevokedAt) || again.Title != l.Title || !slices.Equal(again.Tags, l.Tags) || again.Notes != l.Notes ||
			again.Baseline != l.Baseline {
			t.Fatalf("%q imported as %+v; shown as %s it imports as %+v", raw, l, shown, again)
		}
	})
}
