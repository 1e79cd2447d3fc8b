package clicks

import (
	"encoding/json"
	"net/netip"
	"reflect"
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

// TestSameFields: SameFields compares every field of Click that
// NewClickEvent reads besides code, time and visitor (a click differing
// in any one of them is not the same), and clicks it calls the same have
// the same event but for those.
func TestSameFields(t *testing.T) {
	apart := map[string]bool{"Code": true, "At": true, "Visitor": true, // recorded apart
		"Addr": true, "UA": true} // cleared before a click reaches a sink
	typ := reflect.TypeFor[Click]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if apart[f.Name] {
			continue
		}
		var c Click
		v := reflect.ValueOf(&c).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			v.SetUint(1)
		default:
			t.Fatalf("Click.%s (%s): new to this test; compare it in SameFields if NewClickEvent reads it", f.Name, f.Type)
		}
		if c.SameFields(Click{}) || (Click{}).SameFields(c) {
			t.Errorf("clicks differing in %s are the same", f.Name)
		}
	}
	at := time.Date(2026, 12, 6, 7, 30, 0, 0, time.UTC)
	a := Click{Code: "abc", At: at, Class: ClassBrowser, Country: "DE", Device: DeviceMobile, QR: true, Rule: "r", Visitor: 1}
	b := a
	b.Code, b.At, b.Visitor, b.Addr, b.UA = "other.example/xyz", at.Add(time.Hour), 2, netip.MustParseAddr("192.0.2.1"), "ua"
	if !a.SameFields(b) {
		t.Fatal("clicks differing in code, time, visitor, address and user agent only are not the same")
	}
	ea, eb := NewClickEvent(a), NewClickEvent(b)
	ea.Code, ea.Domain, ea.At, ea.Visitor = eb.Code, eb.Domain, eb.At, eb.Visitor
	if ea != eb {
		t.Errorf("the same fields, different events:\n%+v\n%+v", ea, eb)
	}
}
