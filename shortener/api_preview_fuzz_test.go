package shortener

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// FuzzRulesPreview sends hostile visitors to POST /api/rules/preview:
// never a panic nor a 5xx, only 200 or 400 (a JSON error); a 200 names a
// destination of the rules or variants given, or none.
func FuzzRulesPreview(f *testing.F) {
	f.Add(iphoneUA, "fr-CA,fr;q=0.9", "203.0.113.9", "", "src=qr", "2026-12-07T10:30:00+01:00")
	f.Add("", "", "", "", "", "")
	f.Add("\x00\xff", "*;q=0,en;q=1.5,,,", "::ffff:1.2.3.4%eth0", "fr", "%zz&&=", "tomorrow")
	f.Add(firefoxUA, "zh-Hant-CN-x-a", "2001:db8::1", "DE", "src=qr;x", "9999-12-31T23:59:59Z")
	h := newHandler(f, newMemStore(), nil)
	urls := []string{"https://example.com/m", "https://example.com/fr", "https://example.com/a", "https://example.com/b"}
	rules := `[{"if":{"device":["mobile"]},"url":"https://example.com/m"},
		{"if":{"language":["fr"],"query":[{"name":"src","equals":"qr"}],"time":{"tz":"Europe/Paris","days":["mon"]}},"url":"https://example.com/fr"}]`
	variants := `[{"name":"a","url":"https://example.com/a","weight":40},{"name":"b","url":"https://example.com/b","weight":60}]`
	f.Fuzz(func(t *testing.T, ua, lang, ip, country, query, at string) {
		visitor, _ := json.Marshal(map[string]string{"user_agent": ua, "accept_language": lang, "ip": ip,
			"country": country, "query": query, "at": at})
		w := serve(t, h, "POST", "/api/rules/preview", `{"rules":`+rules+`,"variants":`+variants+`,"visitor":`+string(visitor)+`}`, auth()...)
		var out struct {
			URL   *string `json:"url"`
			Error string  `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("answer %d is not JSON: %.200s", w.Code, w.Body)
		}
		switch w.Code {
		case http.StatusOK:
			if out.URL == nil || !slices.Contains(urls, *out.URL) { // link-level variants: always one
				t.Fatalf("preview answered url %v, not one of the rules' or variants'", out.URL)
			}
		case http.StatusBadRequest:
			if out.Error == "" {
				t.Fatal("a 400 without an error")
			}
		default:
			t.Fatalf("preview = %d %.200s, want 200 or 400", w.Code, w.Body)
		}
	})
}
