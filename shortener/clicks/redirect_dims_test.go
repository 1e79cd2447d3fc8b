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
	cases := []struct{ ua, device, os, browser string }{
		{iphone, DeviceMobile, "ios", "safari"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36", DeviceDesktop, "windows", "chrome"},
		{"Googlebot/2.1 (+http://www.google.com/bot.html)", DeviceBot, UnknownDim, UnknownDim},
		{"", DeviceBot, UnknownDim, UnknownDim},
		{iphone + strings.Repeat("x", 4*MaxUserAgent), DeviceMobile, "ios", "safari"},
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range cases {
				if d, o, b := p.Dims(c.ua); d != c.device || o != c.os || b != c.browser {
					t.Errorf("Dims(%.40q) = %q %q %q, want %q %q %q", c.ua, d, o, b, c.device, c.os, c.browser)
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
