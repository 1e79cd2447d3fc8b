//go:build screenshots

package shortener

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// make screenshots: TestUIScreenshots fills a dashboard with fixed data
// (links created and clicked on a clock that starts on 1 November 2026,
// from addresses a GeoIP file places in six countries, with five user
// agents and three referrers, drawn from a fixed seed) and has
// e2e/screenshots.mjs photograph each page at desktop and phone widths,
// the browser's clock set to the server's, into SCREENSHOTS_DIR.

// shotsNow is the fixed "now" of the screenshots.
var shotsNow = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

// shotLinks are the fixture's links: code, destination, title, tags, and
// a weight (its share of the clicks).
var shotLinks = []struct {
	code, url, title, tags string
	weight                 int
}{
	{"spring", "https://shop.example.com/collections/spring-2027?utm_source=poster", "Spring collection poster", "print, campaign:spring", 40},
	{"menu", "https://bistro.example.org/menu/winter.pdf", "Winter menu", "print, qr", 25},
	{"launch", "https://blog.example.com/2026/11/introducing-edgekit", "Launch post", "blog", 18},
	{"jobs", "https://careers.example.com/openings?team=platform", "Platform jobs", "hiring", 8},
	{"talk", "https://slides.example.net/edge-caching-in-practice", "Conference talk slides", "events", 6},
	{"docs", "https://docs.example.com/getting-started", "", "", 3},
	{"newsletter-december", "https://news.example.com/issues/2026-12", "December newsletter", "email, campaign:winter", 0},
}

// shotNets place the fixture's visitors (a /24 each) in six countries.
var shotNets = []geoNet{
	{"198.51.100.0/24", cityRecord("US", "CA", "San Francisco")},
	{"203.0.113.0/24", cityRecord("DE", "BE", "Berlin")},
	{"192.0.2.0/24", cityRecord("JP", "13", "Tokyo")},
	{"100.64.1.0/24", cityRecord("FR", "IDF", "Paris")},
	{"100.64.2.0/24", cityRecord("GB", "ENG", "London")},
	{"100.64.3.0/24", cityRecord("BR", "SP", "São Paulo")},
}

var shotAgents = []string{
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 14.6; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
}

var shotReferrers = []string{"", "", "https://news.example.net/item?id=1", "https://social.example/feed/", "https://mail.example.com/"}

func TestUIScreenshots(t *testing.T) {
	dir := os.Getenv("SCREENSHOTS_DIR")
	if dir == "" {
		t.Fatal("SCREENSHOTS_DIR is not set (make screenshots sets it)")
	}
	c := &uiClock{t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
	geo := filepath.Join(t.TempDir(), "city.mmdb")
	writeGeoDB(t, geo, "GeoLite2-City", shotNets)
	h := newHandler(t, embeddedStore(t), func(h *Handler) {
		h.UI, h.APIReadKeys, h.now = "/admin", []string{testReadKey}, c.now
		h.ClicksInterval = caddy.Duration(20 * time.Millisecond)
		h.ClicksGeoIP = geo
	})
	srv := dashboardServer(t, h, nil)
	clicks := shotFixture(t, srv.URL, c)
	waitCodeTotal(t, h.clicks.Cfg.Sink, "spring", clicks["spring"])
	waitCodeTotal(t, h.clicks.Cfg.Sink, "docs", clicks["docs"])
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	runNode(t, "screenshots.mjs", 2*time.Minute, "BASE="+srv.URL, "UI=/admin/", "KEY="+testKey,
		"NOW="+shotsNow.Format(time.RFC3339), "CODE=spring", "OUT="+abs)
}

// shotFixture creates the links, one a day from 1 November, then clicks
// them over the days after, and leaves the clock at shotsNow. It returns
// the clicks made per code.
func shotFixture(t *testing.T, base string, c *uiClock) map[string]int64 {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, body string, header ...string) int {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	total := 0
	for i, l := range shotLinks {
		c.mu.Lock()
		c.t = time.Date(2026, 11, 1+3*i, 9+i, 12, 0, 0, time.UTC)
		c.mu.Unlock()
		tags := `null`
		if l.tags != "" {
			tags = `["` + strings.Join(strings.Split(l.tags, ", "), `","`) + `"]`
		}
		title := `null`
		if l.title != "" {
			title = `"` + l.title + `"`
		}
		body := fmt.Sprintf(`{"long_url":%q,"code":%q,"title":%s,"tags":%s}`, l.url, l.code, title, tags)
		if s := do("POST", "/api/links", body, "Authorization", "Bearer "+testKey); s != http.StatusCreated {
			t.Fatalf("create %s: %d", l.code, s)
		}
		total += l.weight
	}
	rng := rand.New(rand.NewPCG(18, 2026))
	clicks := map[string]int64{}
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for day := range 29 {
		n := 8 + day/2 + rng.IntN(6) // more clicks as the month goes on
		for range n {
			at := start.Add(time.Duration(day)*24*time.Hour + time.Duration(rng.IntN(24*60))*time.Minute)
			if at.After(shotsNow) {
				continue
			}
			l := pickWeighted(rng, total)
			created := time.Date(2026, 11, 1+3*l, 9+l, 12, 0, 0, time.UTC)
			if at.Before(created) {
				continue
			}
			c.mu.Lock()
			c.t = at
			c.mu.Unlock()
			net := shotNets[rng.IntN(len(shotNets))].cidr
			ip := strings.TrimSuffix(net, "0/24") + fmt.Sprint(1+rng.IntN(40))
			path := "/" + shotLinks[l].code
			if rng.IntN(5) == 0 {
				path += "?" + QRMarker
			}
			hdr := []string{forwardedFor, ip, "User-Agent", shotAgents[rng.IntN(len(shotAgents))]}
			if ref := shotReferrers[rng.IntN(len(shotReferrers))]; ref != "" {
				hdr = append(hdr, "Referer", ref)
			}
			if s := do("GET", path, "", hdr...); s != http.StatusFound {
				t.Fatalf("GET %s = %d", path, s)
			}
			clicks[shotLinks[l].code]++
		}
	}
	c.mu.Lock()
	c.t = shotsNow
	c.mu.Unlock()
	return clicks
}

// pickWeighted picks a link index by weight.
func pickWeighted(rng *rand.Rand, total int) int {
	n := rng.IntN(total)
	for i, l := range shotLinks {
		if n < l.weight {
			return i
		}
		n -= l.weight
	}
	return 0
}
