package shortener

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// TestTargetingClickClass: a link whose rules read the user agent counts
// people and bots as a link without rules does, though the redirect
// classifies the User-Agent once, for the rule and the click together:
// browsers are people; crawlers, scripts and an empty user agent bots; a
// user agent longer than the parser reads with a bot marker past that is
// still judged whole.
func TestTargetingClickClass(t *testing.T) {
	h := &Handler{Path: filepath.Join(t.TempDir(), "links.db"), API: "/api", APIKeys: []string{testKey}, dataDir: t.TempDir()}
	h.ClicksInterval = caddy.Duration(10 * time.Millisecond)
	if err := provision(t, h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Cleanup() })
	rules := []byte(`{"rules":[{"if":{"device":["mobile"]},"url":"https://example.com/m"}]}`)
	putLink(t, h, link.Link{Code: "ruled", LongURL: "https://example.com/long", Targeting: rules})
	putLink(t, h, link.Link{Code: "plain", LongURL: "https://example.com/long"})
	long := firefoxUA + strings.Repeat(" x", clicks.MaxUserAgent) + " Googlebot/2.1"
	uas := []string{firefoxUA, firefoxUA, "Googlebot/2.1 (+http://www.google.com/bot.html)", "curl/8.5.0", "", long, "MyApp/1.2 (iPhone; iOS 17.4)"}
	for _, ua := range uas {
		for _, code := range []string{"ruled", "plain"} {
			visit(t, h, "GET", "/"+code, "192.0.2.7:1", "User-Agent", ua)
		}
	}
	sink, err := h.clickSink()
	if err != nil {
		t.Fatal(err)
	}
	from, to := time.Now().Add(-48*time.Hour), time.Now().Add(48*time.Hour)
	stats := func(code string) clicks.Stats {
		st, err := sink.ClickStats(context.Background(), code, from, to)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	eventually(t, 5*time.Second, "both links count every visit", func() bool {
		return stats("ruled").Total == int64(len(uas)) && stats("plain").Total == int64(len(uas))
	})
	ruled, plain := stats("ruled"), stats("plain")
	if ruled.People != 3 || ruled.Bots != 4 || plain.People != ruled.People || plain.Bots != ruled.Bots {
		t.Errorf("people/bots: ruled %d/%d, plain %d/%d; want 3/4 each", ruled.People, ruled.Bots, plain.People, plain.Bots)
	}
}
