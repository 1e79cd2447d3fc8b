package shortener

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// tenRules is a rule set of 10 rules on device, country and language
// whose last one matches the benchmark's visitor (a Linux Firefox in the
// US asking for English); the nine before fail only on their language,
// so every condition of every rule is evaluated.
func tenRules() []byte {
	var rules []string
	for i, lang := range []string{"fr", "it", "es", "pt", "nl", "sv", "pl", "ja", "ko"} {
		rules = append(rules, fmt.Sprintf(`{"if":{"device":["desktop"],"country":["US"],"language":["%s"]},"url":"https://example.com/r%d"}`, lang, i))
	}
	rules = append(rules, `{"name":"en","if":{"device":["desktop"],"os":["linux"],"browser":["firefox"],"country":["US"],"language":["en"]},"url":"https://example.com/en"}`)
	return []byte(`{"rules":[` + strings.Join(rules, ",") + `]}`)
}

// BenchmarkRedirectTargeting10Rules measures an L1 hit of a link whose
// targeting has 10 rules, the last matching, with user-agent, GeoIP
// country and language conditions, click counting on: beside
// BenchmarkRedirectL1Hit, what targeting costs.
func BenchmarkRedirectTargeting10Rules(b *testing.B) {
	geo := filepath.Join(b.TempDir(), "city.mmdb")
	writeGeoDB(b, geo, "GeoLite2-City", testCityNets)
	s := newClickMemStore()
	s.links["abc1234"] = link.Link{Code: "abc1234", LongURL: "https://example.com/some/long/path", Targeting: tenRules()}
	h := newHandler(b, s, func(h *Handler) { h.LocalCacheTTL = caddy.Duration(time.Hour); h.ClicksGeoIP = geo })
	if h.clicks == nil || h.geo == nil {
		b.Fatal("click counting or GeoIP is off")
	}
	r, _ := http.NewRequest("GET", "http://sho.rt/abc1234", nil)
	r.RemoteAddr = "198.51.100.7:40000"
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	r.Header.Set("Referer", "https://news.example.com/item?id=42")
	r.Header.Set("Accept-Language", "en-US,en;q=0.9,de;q=0.5")
	w := &discardWriter{h: http.Header{}}
	if err := h.ServeHTTP(w, r, nextHandler); err != nil || w.h.Get("Location") != "https://example.com/en" {
		b.Fatalf("warming: %v %v", err, w.h)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		if err := h.ServeHTTP(w, r, nextHandler); err != nil {
			b.Fatal(err)
		}
	}
}
