package clicks

import (
	"strings"
	"sync"
	"testing"
)

// Dims names a user agent's device, OS and browser as clicks do, bots
// by ClassifyUserAgent, and reads only the first MaxUserAgent bytes;
// concurrent callers share the cache (run with -race).
func TestUAParserDims(t *testing.T) {
	p := NewUAParser()
	iphone := "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
	cases := []struct {
		ua, device, os, browser string
		class                   UAClass
	}{
		{iphone, DeviceMobile, "ios", "safari", ClassBrowser},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36", DeviceDesktop, "windows", "chrome", ClassBrowser},
		{"Googlebot/2.1 (+http://www.google.com/bot.html)", DeviceBot, UnknownDim, UnknownDim, ClassBot},
		{"", DeviceBot, UnknownDim, UnknownDim, ClassBot},
		{"MyApp/1.2 (iPhone; iOS 17.4)", DeviceOther, UnknownDim, UnknownDim, ClassOther},
		{iphone + strings.Repeat("x", 4*MaxUserAgent), DeviceMobile, "ios", "safari", ClassBrowser},
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range cases {
				d, o, b, cl := p.Dims(c.ua)
				if d != c.device || o != c.os || b != c.browser || cl != c.class {
					t.Errorf("Dims(%.40q) = %q %q %q %v, want %q %q %q %v", c.ua, d, o, b, cl, c.device, c.os, c.browser, c.class)
				}
				if len(c.ua) <= MaxUserAgent && cl != ClassifyUserAgent(c.ua) {
					t.Errorf("Dims(%.40q) class %v, ClassifyUserAgent %v", c.ua, cl, ClassifyUserAgent(c.ua))
				}
			}
		}()
	}
	wg.Wait()
}

// Country without a GeoIP file is "".
func TestCountryNone(t *testing.T) {
	var g *GeoIP
	if c := g.Country(geoProbes[0]); c != "" {
		t.Errorf("nil GeoIP: Country = %q, want \"\"", c)
	}
	if c := (&GeoIP{}).Country(geoProbes[0]); c != "" {
		t.Errorf("GeoIP without a file: Country = %q, want \"\"", c)
	}
}
