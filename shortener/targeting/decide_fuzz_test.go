package targeting

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// fuzzSet has a rule of each condition kind, rule-level and link-level
// variants, and no catch-all, so that every path of Decide is reached.
const fuzzSet = `{"rules":[
	{"if":{"device":["mobile","tablet"],"os":["ios","android"]},"url":"https://store.example/","app_url":"myapp://open"},
	{"if":{"browser":["chrome"],"country":["US","CA"]},"url":"https://na.example/"},
	{"if":{"language":["fr-CA","zh-Hant","de"]},"variants":[{"name":"a","url":"https://a.example/","weight":30},
		{"name":"b","url":"https://b.example/","weight":50},{"name":"c","url":"https://c.example/","weight":20}]},
	{"if":{"ip":["203.0.113.0/24","2001:db8::/32","::ffff:198.51.100.0/120"]},"url":"https://ip.example/"},
	{"if":{"query":[{"name":"utm_source","equals":"news"},{"name":"ref","present":true},{"name":"q q","equals":"é&"}]},"url":"https://q.example/"},
	{"if":{"time":{"tz":"Europe/Paris","days":["mon"],"hours":{"from":2,"until":3}}},"url":"https://t.example/"}],
 "variants":[{"name":"x","url":"https://x.example/","weight":40},{"name":"y","url":"https://y.example/","weight":60}]}`

// FuzzDecide: for any visitor, Decide does not panic, names indexes in
// range, sends only to the set's destinations, and decides again the same.
func FuzzDecide(f *testing.F) {
	f.Add("fr-CA;q=0.5, en", "utm_source=news&ref", "mobile", "ios", "chrome", "US", []byte{203, 0, 113, 9}, int64(1772409600e9), uint64(7), "abc")
	f.Add("zh-Hant-CN-x-a-b, *;q=0", "q+q=%C3%A9%26", "", "", "", "", []byte{}, int64(0), uint64(0), "")
	f.Add(strings.Repeat("de-", 400), "%zz;&&&=", "bot", "other", "x", "ca", make([]byte, 16), int64(-1), ^uint64(0), "\xff")
	s, err := Parse([]byte(fuzzSet), fuzzOpts)
	if err != nil {
		f.Fatal(err)
	}
	rules, variants := s.Rules(), s.Variants()
	f.Fuzz(func(t *testing.T, al, query, device, os, browser, country string, addr []byte, now int64, key uint64, link string) {
		v := Visitor{Device: device, OS: os, Browser: browser, Country: country, AcceptLanguage: al,
			RawQuery: query, Now: time.Unix(0, now), Key: key, Link: link}
		if a, ok := netip.AddrFromSlice(addr); ok {
			v.Addr = a
		}
		d := s.Decide(&v)
		if again := s.Decide(&v); again != d {
			t.Fatalf("decided %+v, then %+v", d, again)
		}
		list := variants
		switch {
		case d.Rule < -1 || d.Rule >= len(rules):
			t.Fatalf("rule %d of %d", d.Rule, len(rules))
		case d.Rule >= 0:
			r := rules[d.Rule]
			if d.RuleName != defaultName(d.Rule) || d.AppURL != r.AppURL || r.URL != "" && (d.URL != r.URL || d.Variant != -1) {
				t.Fatalf("rule %d (%+v): decided %+v", d.Rule, r, d)
			}
			list = r.Variants
		case d.RuleName != "" || d.AppURL != "":
			t.Fatalf("no rule: decided %+v", d)
		}
		if d.Variant == -1 && len(list) > 0 || d.Variant >= len(list) {
			t.Fatalf("variant %d of %d: %+v", d.Variant, len(list), d)
		}
		if d.Variant >= 0 && (d.URL != list[d.Variant].URL || d.VariantName != list[d.Variant].Name) {
			t.Fatalf("variant %d (%+v): decided %+v", d.Variant, list[d.Variant], d)
		}
	})
}

// FuzzQueryScan: the query is read as url.ParseQuery reads it.
func FuzzQueryScan(f *testing.F) {
	for _, seed := range []string{"a=1&b=2", "a+b=c%26d", "x=%", "a;b", "%C3%A9", "long=" + strings.Repeat("%76", 256)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > MaxRawQuery {
			raw = raw[:MaxRawQuery]
		}
		checkScan(t, raw)
	})
}
