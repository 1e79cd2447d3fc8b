package targeting

import (
	"net/netip"
	"testing"
	"time"
)

// TestConditions: each kind of condition, for values that match and
// values that do not.
func TestConditions(t *testing.T) {
	paris := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC) // a Monday, 11:30 in Paris
	for _, tc := range []struct {
		name, cond string
		v          Visitor
		want       bool
	}{
		{"device hit", `{"device":["mobile","tablet"]}`, Visitor{Device: "tablet"}, true},
		{"device miss", `{"device":["mobile","tablet"]}`, Visitor{Device: "desktop"}, false},
		{"device unknown", `{"device":["other"]}`, Visitor{}, false},
		{"device any case in rule", `{"device":["Bot"]}`, Visitor{Device: "bot"}, true},
		{"os hit", `{"os":["ios","android"]}`, Visitor{OS: "android"}, true},
		{"os miss", `{"os":["ios"]}`, Visitor{OS: "macos"}, false},
		{"browser hit", `{"browser":["chrome","samsung internet"]}`, Visitor{Browser: "samsung internet"}, true},
		{"browser miss", `{"browser":["chrome"]}`, Visitor{Browser: "safari"}, false},
		{"country hit", `{"country":["us","CA"]}`, Visitor{Country: "US"}, true},
		{"country miss", `{"country":["US"]}`, Visitor{Country: "FR"}, false},
		{"country unknown", `{"country":["US"]}`, Visitor{}, false},
		{"language hit", `{"language":["fr"]}`, Visitor{AcceptLanguage: "fr-CA,en;q=0.5"}, true},
		{"language miss", `{"language":["de"]}`, Visitor{AcceptLanguage: "fr-CA,en;q=0.5"}, false},
		{"ip v4 prefix", `{"ip":["203.0.113.0/24"]}`, Visitor{Addr: netip.MustParseAddr("203.0.113.200")}, true},
		{"ip v4 outside", `{"ip":["203.0.113.0/24"]}`, Visitor{Addr: netip.MustParseAddr("203.0.114.1")}, false},
		{"ip single", `{"ip":["198.51.100.7"]}`, Visitor{Addr: netip.MustParseAddr("198.51.100.7")}, true},
		{"ip single other", `{"ip":["198.51.100.7"]}`, Visitor{Addr: netip.MustParseAddr("198.51.100.8")}, false},
		{"ip v6", `{"ip":["2001:db8::/32"]}`, Visitor{Addr: netip.MustParseAddr("2001:db8:1::5")}, true},
		{"ip v6 outside", `{"ip":["2001:db8::/32"]}`, Visitor{Addr: netip.MustParseAddr("2001:db9::1")}, false},
		{"ip mapped visitor", `{"ip":["203.0.113.0/24"]}`, Visitor{Addr: netip.MustParseAddr("::ffff:203.0.113.9")}, true},
		{"ip mapped rule", `{"ip":["::ffff:203.0.113.0/120"]}`, Visitor{Addr: netip.MustParseAddr("203.0.113.9")}, true},
		{"ip zoned visitor", `{"ip":["fe80::/10"]}`, Visitor{Addr: netip.MustParseAddr("fe80::1%eth0")}, true},
		{"ip v4 not v6", `{"ip":["::/0"]}`, Visitor{Addr: netip.MustParseAddr("192.0.2.1")}, false},
		{"ip unknown", `{"ip":["0.0.0.0/0"]}`, Visitor{}, false},
		{"query equals", `{"query":[{"name":"utm_source","equals":"news"}]}`, Visitor{RawQuery: "a=1&utm_source=news"}, true},
		{"query equals other", `{"query":[{"name":"utm_source","equals":"news"}]}`, Visitor{RawQuery: "utm_source=newsletter"}, false},
		{"query present", `{"query":[{"name":"ref","present":true}]}`, Visitor{RawQuery: "x&ref"}, true},
		{"query absent", `{"query":[{"name":"ref","present":true}]}`, Visitor{RawQuery: "refx=1"}, false},
		{"query any of", `{"query":[{"name":"a","equals":"1"},{"name":"b","present":true}]}`, Visitor{RawQuery: "b="}, true},
		{"query decoded", `{"query":[{"name":"q s","equals":"a&b é"}]}`, Visitor{RawQuery: "q+s=a%26b+%C3%A9"}, true},
		{"query empty equals", `{"query":[{"name":"e","equals":""}]}`, Visitor{RawQuery: "e"}, true},
		{"query bad escape skipped", `{"query":[{"name":"a","present":true}]}`, Visitor{RawQuery: "a=%zz"}, false},
		{"query semicolon skipped", `{"query":[{"name":"a","equals":"1"}]}`, Visitor{RawQuery: "a=1;b=2"}, false},
		{"time from", `{"time":{"from":"2026-03-02T10:30:00Z"}}`, Visitor{Now: paris}, true},
		{"time before from", `{"time":{"from":"2026-03-02T10:30:00.000000001Z"}}`, Visitor{Now: paris}, false},
		{"time until exclusive", `{"time":{"until":"2026-03-02T10:30:00Z"}}`, Visitor{Now: paris}, false},
		{"time until", `{"time":{"until":"2026-03-02T11:30:01+01:00"}}`, Visitor{Now: paris}, true},
		{"time day", `{"time":{"tz":"Europe/Paris","days":["mon"]}}`, Visitor{Now: paris}, true},
		{"time other day", `{"time":{"tz":"Europe/Paris","days":["tue","sun"]}}`, Visitor{Now: paris}, false},
		{"time hours local", `{"time":{"tz":"Europe/Paris","hours":{"from":11,"until":12}}}`, Visitor{Now: paris}, true},
		{"time hours utc", `{"time":{"hours":{"from":11,"until":12}}}`, Visitor{Now: paris}, false},
		{"time unknown", `{"time":{"hours":{"from":0,"until":24}}}`, Visitor{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := oneRule(t, tc.cond).Decide(&tc.v)
			if got := d.Rule == 0; got != tc.want {
				t.Errorf("if %s, visitor %+v: matched = %v, want %v", tc.cond, tc.v, got, tc.want)
			}
		})
	}
}

// TestCombined: every condition of a rule must hold.
func TestCombined(t *testing.T) {
	s := oneRule(t, `{"device":["mobile"],"os":["ios"],"country":["US"],"language":["en"],
		"ip":["192.0.2.0/24"],"query":[{"name":"c","equals":"1"}],"time":{"days":["mon"]}}`)
	all := Visitor{Device: "mobile", OS: "ios", Country: "US", AcceptLanguage: "en-US",
		Addr: netip.MustParseAddr("192.0.2.1"), RawQuery: "c=1", Now: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)}
	if d := s.Decide(&all); d.Rule != 0 {
		t.Fatalf("all conditions hold: rule %d, want 0", d.Rule)
	}
	spoil := []func(v *Visitor){
		func(v *Visitor) { v.Device = "desktop" },
		func(v *Visitor) { v.OS = "android" },
		func(v *Visitor) { v.Country = "CA" },
		func(v *Visitor) { v.AcceptLanguage = "fr" },
		func(v *Visitor) { v.Addr = netip.MustParseAddr("192.0.3.1") },
		func(v *Visitor) { v.RawQuery = "c=2" },
		func(v *Visitor) { v.Now = v.Now.Add(24 * time.Hour) },
	}
	for i, f := range spoil {
		v := all
		f(&v)
		if d := s.Decide(&v); d.Rule != -1 {
			t.Errorf("condition %d fails: rule %d, want -1", i, d.Rule)
		}
	}
}

// TestOrder: the first rule that matches wins; a rule without "if" (or
// with an empty one) matches all; with no rule matching, the link-level
// variants decide, and without them the link's own destination.
func TestOrder(t *testing.T) {
	s := mustParse(t, `{"rules":[
		{"name":"mobile","if":{"device":["mobile"]},"url":"https://m.example/"},
		{"if":{"os":["ios"]},"url":"https://ios.example/","app_url":"myapp://x"},
		{"if":{},"url":"https://all.example/"},
		{"url":"https://never.example/"}]}`)
	for _, tc := range []struct {
		v    Visitor
		want Decision
	}{
		{Visitor{Device: "mobile", OS: "ios"}, Decision{Rule: 0, Variant: -1, URL: "https://m.example/", RuleName: "mobile"}},
		{Visitor{Device: "tablet", OS: "ios"}, Decision{Rule: 1, Variant: -1, URL: "https://ios.example/", AppURL: "myapp://x", RuleName: "rule-2"}},
		{Visitor{}, Decision{Rule: 2, Variant: -1, URL: "https://all.example/", RuleName: "rule-3"}},
	} {
		if got := s.Decide(&tc.v); got != tc.want {
			t.Errorf("Decide(%+v) = %+v, want %+v", tc.v, got, tc.want)
		}
	}
	s = mustParse(t, `{"rules":[{"if":{"device":["bot"]},"url":"https://bot.example/"}],
		"variants":[{"name":"x","url":"https://x.example/","weight":50},{"name":"y","url":"https://y.example/","weight":50}]}`)
	d := s.Decide(&Visitor{Device: "mobile", Key: 1, Link: "abc"})
	if d.Rule != -1 || d.Variant < 0 || d.URL != s.srcVariants[d.Variant].URL || d.VariantName != s.srcVariants[d.Variant].Name || d.RuleName != "" {
		t.Errorf("no rule matches: %+v, want a link-level variant", d)
	}
	s = oneRule(t, `{"device":["bot"]}`)
	if d := s.Decide(&Visitor{}); d != (Decision{Rule: -1, Variant: -1}) {
		t.Errorf("no rule, no variants: %+v, want none", d)
	}
}

// TestNilSetAndVisitor: a nil set decides nothing, and a nil visitor is
// an unknown one.
func TestNilSetAndVisitor(t *testing.T) {
	var s *Set
	if d := s.Decide(&Visitor{}); d != (Decision{Rule: -1, Variant: -1}) {
		t.Errorf("nil set: %+v", d)
	}
	if s.Rules() != nil || s.Variants() != nil || s.Needs() != 0 {
		t.Error("nil set has rules, variants or needs")
	}
	s = mustParse(t, `{"rules":[{"if":{"device":["bot"]},"url":"https://a.example/"},{"url":"https://b.example/"}]}`)
	if d := s.Decide(nil); d.Rule != 1 {
		t.Errorf("nil visitor: rule %d, want 1", d.Rule)
	}
	for _, in := range []string{"", " null ", "{}", `{"rules":[],"variants":null}`} {
		if s, err := Parse([]byte(in), testOpts); s != nil || err != nil {
			t.Errorf("Parse(%q) = %v, %v; want nil, nil", in, s, err)
		}
	}
}

// TestNeeds: a set needs exactly the values its conditions read.
func TestNeeds(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want Needs
	}{
		{`{"rules":[{"url":"https://a.example/"}]}`, 0},
		{`{"rules":[{"if":{"browser":["chrome"]},"url":"https://a.example/"}]}`, NeedUA},
		{`{"rules":[{"if":{"country":["FR"],"time":{"days":["sun"]}},"url":"https://a.example/"}]}`, NeedCountry | NeedTime},
		{`{"rules":[{"if":{"language":["fr"]},"url":"https://a.example/"},{"if":{"ip":["::1"]},"url":"https://b.example/"}]}`, NeedLanguage | NeedAddr},
		{`{"rules":[{"if":{"query":[{"name":"a","present":true}]},"variants":[{"name":"a","url":"https://a.example/","weight":1},{"name":"b","url":"https://b.example/","weight":99}]}]}`, NeedQuery | NeedVisitor},
		{`{"variants":[{"name":"a","url":"https://a.example/","weight":1},{"name":"b","url":"https://b.example/","weight":99}]}`, NeedVisitor},
	} {
		if got := mustParse(t, tc.set).Needs(); got != tc.want {
			t.Errorf("Needs of %s = %07b, want %07b", tc.set, got, tc.want)
		}
	}
}

// TestDecideConcurrent: one set decides for many goroutines at once (run
// with -race).
func TestDecideConcurrent(t *testing.T) {
	s := mustParse(t, tenRules())
	want := benchVisitor()
	first := s.Decide(&want)
	done := make(chan Decision)
	for g := range 4 {
		go func() {
			v := benchVisitor()
			var d Decision
			for range 200 + g {
				d = s.Decide(&v)
			}
			done <- d
		}()
	}
	for range 4 {
		if d := <-done; d != first {
			t.Errorf("concurrent Decide: %+v, want %+v", d, first)
		}
	}
}
