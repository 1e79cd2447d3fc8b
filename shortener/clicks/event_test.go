package clicks

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestNewClickEvent: a click's event holds its dimensions as /stats
// counts them, the referrer host bounded as the counters bound it, the
// visitor's daily hash, and never the address or the user agent.
func TestNewClickEvent(t *testing.T) {
	if ClickDimensions != [...]string{DimCountry, DimRegion, DimCity, DimDevice, DimOS, DimBrowser, DimSource, DimRule, DimVariant} {
		t.Fatalf("ClickDimensions changed order: NewClickEvent reads them by place: %v", ClickDimensions)
	}
	at := time.Date(2026, 12, 6, 7, 30, 0, 0, time.FixedZone("CET", 3600))
	c := Click{Code: "abc", At: at, Referrer: "news.example.com", Class: ClassBrowser,
		Addr: netip.MustParseAddr("198.51.100.7"), UA: "Mozilla/5.0 secret-ua",
		Device: DeviceMobile, OS: "ios", Browser: "safari", Country: "DE", Region: "DE-BE", City: "Berlin",
		QR: true, Visitor: 0xfedcba9876543210, Rule: "French", Variant: "b"}
	got := NewClickEvent(c)
	want := ClickEvent{Code: "abc", At: at.UTC(), Referrer: "news.example.com", Country: "DE", Region: "DE-BE", City: "Berlin",
		Device: DeviceMobile, OS: "ios", Browser: "safari", Source: SourceQR, Rule: "French", Variant: "b", Visitor: "fedcba9876543210"}
	if got != want {
		t.Errorf("event\n%+v\nwant\n%+v", got, want)
	}
	b, _ := json.Marshal(got)
	if s := string(b); strings.Contains(s, "198.51") || strings.Contains(s, "secret-ua") {
		t.Errorf("the event's JSON holds the address or user agent: %s", s)
	}
	bare := NewClickEvent(Click{Code: "abc", At: at, Class: ClassBot, Referrer: strings.Repeat("x", 300)})
	if !bare.Bot || bare.Referrer != OtherReferrer || bare.Visitor != "" || bare.Region != "" || bare.City != "" ||
		bare.Rule != "" || bare.Variant != "" || bare.Country != UnknownDim || bare.Device != UnknownDim || bare.Source != SourceLink {
		t.Errorf("a bot's bare click: %+v", bare)
	}
	b, _ = json.Marshal(bare)
	for _, absent := range []string{"region", "city", "rule", "variant", "visitor"} {
		if strings.Contains(string(b), `"`+absent+`"`) {
			t.Errorf("%s present in %s", absent, b)
		}
	}
}
