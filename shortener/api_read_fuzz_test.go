package shortener

import (
	"fmt"
	"net/http"
	"testing"
)

// FuzzAPIReadQueries sends any query string to the export, to a link's
// history and to its stats: each answers 200 or a 400 (never a 5xx), and
// serve() checks every answer against openapi.json.
func FuzzAPIReadQueries(f *testing.F) {
	for _, seed := range []string{
		"", "format=csv&status=all", "format=xml", "format=ndjson&format=csv", "status=exhausted", "status=%00",
		"limit=1", "limit=0", "limit=99999999999999999999", "cursor=3", "cursor=-1", "cursor=%zz", "x=1&;&&=",
		"granularity=week&tz=Asia/Kolkata&format=csv", "tz=Local", "tz=../../etc/passwd", "granularity=month&from=2026-01-01T00:00:00Z",
		"granularity=hour&from=2025-12-02T00:00:00Z", "tz=Etc/GMT%2B14&granularity=day",
	} {
		f.Add(seed)
	}
	s := openFuzzEmbedded(f)
	h := newHandler(f, s, withReadKey)
	code := create(f, h, `{"long_url":"https://example.com/0","title":"=1+2"}`).Code
	for i := range 3 {
		body := fmt.Sprintf(`{"long_url":"https://example.com/%d"}`, i+1)
		if w := serve(f, h, "PATCH", "/api/links/"+code, body, append(auth(), "Content-Type", "application/merge-patch+json")...); w.Code != http.StatusOK {
			f.Fatalf("PATCH = %d %s", w.Code, w.Body)
		}
	}
	f.Fuzz(func(t *testing.T, query string) {
		query = requestTargetSafe(query)
		for _, path := range []string{"/api/links/export?", "/api/links/" + code + "/history?", "/api/links/" + code + "/stats?"} {
			w := serve(t, h, "GET", path+query, "", "Authorization", "Bearer "+readKey)
			if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
				t.Fatalf("GET %s%s: status %d %s", path, query, w.Code, w.Body)
			}
		}
	})
}
