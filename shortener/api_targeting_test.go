package shortener

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

const targetingBody = `{"long_url":"https://example.com/home",
	"rules":[{"name":"Phones","if":{"device":["Mobile"],"country":["fr"]},"url":"https://example.com/m"},
	         {"if":{"os":["ios"]},"url":"https://example.com/ios","app_url":"myapp://open/1"}],
	"variants":[{"name":"a","url":"https://example.com/a","weight":30},{"name":"b","url":"https://example.com/b","weight":70}],
	"fallback_url":"https://example.com/gone"}`

// A link's rules, variants and fallback_url go through the API as any
// field does: normalised on create, shown by GET, replaced by PATCH
// (recorded in its history), exported and imported unchanged.
func TestAPITargetingRoundTrip(t *testing.T) {
	bothStores(t, func(t *testing.T, s link.Store) {
		h := newHandler(t, s, func(h *Handler) { h.AppSchemes = []string{"myapp"} })
		body := strings.Replace(targetingBody, `,"country":["fr"]`, "", 1) // no GeoIP here
		out := create(t, h, body)
		if got := string(out.Rules); !strings.Contains(got, `"device":["mobile"]`) || !strings.Contains(got, `"app_url":"myapp://open/1"`) {
			t.Errorf("created rules = %s, want them normalised (device mobile) with the app_url", got)
		}
		if out.FallbackURL == nil || *out.FallbackURL != "https://example.com/gone" {
			t.Errorf("created fallback_url = %v", out.FallbackURL)
		}
		got, _ := getLink(t, h, out.Code)
		if !bytes.Equal(got.Rules, out.Rules) || !bytes.Equal(got.Variants, out.Variants) {
			t.Errorf("GET rules/variants = %s %s, want %s %s", got.Rules, got.Variants, out.Rules, out.Variants)
		}
		newVariants := `[{"name":"c","url":"https://example.com/c","weight":50},{"name":"d","url":"https://example.com/d","weight":50}]`
		if a := mergePatch(t, h, out.Code, `{"variants":`+newVariants+`,"fallback_url":null}`); a.Code != http.StatusOK {
			t.Fatalf("PATCH variants = %d %s", a.Code, a.Body)
		}
		got, _ = getLink(t, h, out.Code)
		if !bytes.Equal(got.Rules, out.Rules) || string(got.Variants) != newVariants || got.FallbackURL != nil {
			t.Errorf("after PATCH: rules %s variants %s fallback %v; want the rules kept, the new variants, no fallback",
				got.Rules, got.Variants, got.FallbackURL)
		}
		hist := serve(t, h, "GET", "/api/links/"+out.Code+"/history", "", auth()...)
		if !strings.Contains(hist.Body.String(), `"variants":{"from":`) || !strings.Contains(hist.Body.String(), `"fallback_url":{"from":"https://example.com/gone","to":null}`) {
			t.Errorf("history = %s, want the variants and fallback_url changes", hist.Body)
		}
		if a := mergePatch(t, h, out.Code, `{"rules":null,"variants":[]}`); a.Code != http.StatusOK {
			t.Fatalf("PATCH clearing = %d %s", a.Code, a.Body)
		}
		if got, _ = getLink(t, h, out.Code); string(got.Rules) != "null" || string(got.Variants) != "null" {
			t.Errorf("after clearing: rules %s variants %s, want null and null", got.Rules, got.Variants)
		}
	})
}

// An export line carries the targeting; imported elsewhere it comes back
// byte for byte.
func TestAPITargetingExportImport(t *testing.T) {
	src := newHandler(t, openTestEmbedded(t), func(h *Handler) { h.AppSchemes = []string{"myapp"} })
	out := create(t, src, strings.Replace(targetingBody, `,"country":["fr"]`, "", 1))
	w := serve(t, src, "GET", "/api/links/export?format=ndjson", "", auth()...)
	line := strings.TrimSpace(w.Body.String())
	if !strings.Contains(line, `"rules":[`) || !strings.Contains(line, `"fallback_url":"https://example.com/gone"`) {
		t.Fatalf("export line = %s, want the rules and fallback_url", line)
	}
	var item map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &item); err != nil {
		t.Fatal(err)
	}
	keep := map[string]json.RawMessage{}
	for _, k := range []string{"code", "long_url", "rules", "variants", "fallback_url"} {
		keep[k] = item[k]
	}
	b, _ := json.Marshal(map[string]any{"mode": "import", "links": []any{keep}})
	dst := newHandler(t, openTestPostgres(t), func(h *Handler) { h.AppSchemes = []string{"myapp"} })
	if w := serve(t, dst, "POST", "/api/links/batch", string(b), auth()...); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"created":1`) {
		t.Fatalf("import = %d %s", w.Code, w.Body)
	}
	got, _ := getLink(t, dst, out.Code)
	if !bytes.Equal(got.Rules, out.Rules) || !bytes.Equal(got.Variants, out.Variants) || *got.FallbackURL != *out.FallbackURL {
		t.Errorf("imported: rules %s variants %s fallback %v; want %s %s %v", got.Rules, got.Variants, *got.FallbackURL,
			out.Rules, out.Variants, *out.FallbackURL)
	}
}

// A refused rule names its field; a country needs clicks_geoip; a rule's
// url and the fallback pass the long URL's policy.
func TestAPITargetingRefusals(t *testing.T) {
	h := newHandler(t, newMemStore(), func(h *Handler) { h.AppSchemes = []string{"myapp"} })
	for _, tc := range []struct{ body, want string }{
		{`{"long_url":"https://example.com/","rules":[{"if":{"country":["FR"]},"url":"https://example.com/fr"}]}`,
			"rules[0].if.country: a country condition needs a GeoIP database"},
		{`{"long_url":"https://example.com/","rules":[{"url":"http://10.0.0.1/"}]}`, "rules[0].url: host '10.0.0.1' is a loopback"},
		{`{"long_url":"https://example.com/","rules":[{"url":"http://sho.rt/x"}]}`, "rules[0].url: points to this shortener"},
		{`{"long_url":"https://example.com/","variants":[{"name":"a","url":"https://example.com/a","weight":60},{"name":"b","url":"https://example.com/b","weight":60}]}`,
			"variants: the weights sum to 120"},
		{`{"long_url":"https://example.com/","rules":[{"if":{"os":["ios"]},"url":"https://example.com/","app_url":"other://x"}]}`,
			`rules[0].app_url: the scheme \"other\"`},
		{`{"long_url":"https://example.com/","fallback_url":"http://192.168.1.1/"}`, "fallback_url host '192.168.1.1' is a loopback"},
	} {
		w := serve(t, h, "POST", "http://sho.rt/api/links", tc.body, auth()...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("POST %s = %d %s, want 400 with %q", tc.body, w.Code, w.Body, tc.want)
		}
	}
}

// Rules near their 64 KiB bound fit in a create's body (maxBody).
func TestAPITargetingBodyRoom(t *testing.T) {
	h := newHandler(t, newMemStore(), nil)
	var rules []string
	for i := range 40 {
		rules = append(rules, fmt.Sprintf(`{"if":{"query":[{"name":"v","equals":"%d"}]},"url":"https://example.com/%d/%s"}`, i, i, strings.Repeat("p", 1500)))
	}
	body := `{"long_url":"https://example.com/","rules":[` + strings.Join(rules, ",") + `]}`
	if len(body) < 60<<10 {
		t.Fatalf("body of %d bytes, want about 60 KiB", len(body))
	}
	if w := serve(t, h, "POST", "http://sho.rt/api/links", body, auth()...); w.Code != http.StatusCreated {
		t.Errorf("create with %d bytes of rules = %d %.200s, want 201", len(body), w.Code, w.Body)
	}
}
