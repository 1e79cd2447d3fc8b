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

// POST <api>/rules/preview decides as a redirect does: the same rule for
// a user agent, the same variant for a visitor, storing nothing.
func TestAPIRulesPreview(t *testing.T) {
	h := newHandler(t, newMemStore(), func(h *Handler) { h.SourceHeader = true })
	rules := `[{"name":"phones","if":{"device":["mobile"]},"url":"https://example.com/m"},
		{"if":{"time":{"tz":"Europe/Paris","hours":{"from":9,"until":18}}},"url":"https://example.com/day"}]`
	variants := `[{"name":"a","url":"https://example.com/a","weight":50},{"name":"b","url":"https://example.com/b","weight":50}]`
	preview := func(visitor string) map[string]any {
		t.Helper()
		w := serve(t, h, "POST", "/api/rules/preview", `{"code":"pv1","rules":`+rules+`,"variants":`+variants+`,"visitor":`+visitor+`}`, auth()...)
		var out map[string]any
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &out) != nil {
			t.Fatalf("preview %s = %d %s", visitor, w.Code, w.Body)
		}
		return out
	}
	if out := preview(`{"user_agent":"` + iphoneUA + `"}`); out["rule"] != "phones" || out["url"] != "https://example.com/m" || out["device"] != "mobile" || out["os"] != "ios" {
		t.Errorf("an iPhone: %v, want the phones rule", out)
	}
	if out := preview(`{"user_agent":"` + firefoxUA + `","at":"2026-12-07T10:30:00+01:00"}`); out["rule"] != "rule-2" || out["url"] != "https://example.com/day" {
		t.Errorf("a desktop at 10:30 in Paris: %v, want rule-2", out)
	}
	create(t, h, `{"long_url":"https://example.com/long","code":"pv1","variants":`+variants+`}`)
	for i := range 20 {
		ip := fmt.Sprintf("198.51.100.%d", i)
		got := preview(`{"user_agent":"` + firefoxUA + `","ip":"` + ip + `","at":"2026-12-07T03:00:00Z"}`)
		w := visit(t, h, "GET", "/pv1", ip+":1", "User-Agent", firefoxUA)
		if v := w.Header().Get("X-Shortener-Variant"); got["variant"] != v || got["rule"] != nil {
			t.Errorf("visitor %s: preview variant %v, redirect %q; want the same", ip, got["variant"], v)
		}
	}
}
