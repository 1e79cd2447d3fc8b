package targeting

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzOpts: the URL oracle is exampleOnly (https, host ending in
// ".example"); app_url may use myapp only.
var fuzzOpts = Options{CheckURL: exampleOnly, AppSchemes: []string{"myapp"}, GeoIP: true}

// FuzzParse: whatever Parse accepts keeps every bound, points only where
// the URL oracle allows, and parses again, marshalled, to an equal set.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		richSet, tenRules(), rulesOf(3), "", "null", "{}", `{"rules":[]}`,
		`{"variants":[{"name":"a","url":"https://a.example/","weight":50},{"name":"b","url":"https://b.example/","weight":50}]}`,
		`{"rules":[{"if":{"os":["ios"]},"url":"https://s.example/","app_url":"myapp://x"}]}`,
		`{"rules":[{"if":{"ip":["::ffff:1.2.3.4/120","10.0.0.1"],"language":["ZH-hant-tw"]},"url":"https://a.example/"}]}`,
		`{"rules":[{"if":{"time":{"tz":"Asia/Tokyo","from":"2026-01-01T00:00:00+09:00","hours":{"from":0,"until":24}}},"url":"https://a.example/"}]}`,
		`{"rules":[{"if":{"query":[{"name":"a","equals":""},{"name":"b","present":true}]},"url":"https://a.example/"}]}`,
		`{"rules":[{"url":"https://a.example/","url":"https://b.example/"}]}`,
		`{"rules":[{"name":"rule-1","url":"https://a.example/"}],"variants":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, fuzzOpts)
		if err != nil {
			if _, ok := err.(*FieldError); !ok {
				t.Fatalf("error %v is a %T, not a *FieldError", err, err)
			}
			return
		}
		if s == nil {
			return
		}
		checkBounds(t, s.Rules(), s.Variants())
		out := normalised(t, s)
		again, err := Parse([]byte(out), fuzzOpts)
		if err != nil {
			t.Fatalf("the normalised form %s does not parse: %v", out, err)
		}
		if normalised(t, again) != out || !reflect.DeepEqual(again.Rules(), s.Rules()) || !reflect.DeepEqual(again.Variants(), s.Variants()) {
			t.Fatalf("parsed again, %s is %s", out, normalised(t, again))
		}
	})
}

// fieldValues are the values of a valid set FuzzParseFields builds, in
// order: rule name, url, app_url, language, ip, country, browser, query
// name, query value, tz, from, until, day, os, device, variant name.
var fieldValues = [...]string{"iPhone", "https://a.example/x", "myapp://open", "fr-CA", "203.0.113.0/24", "US",
	"chrome", "utm", "news", "Europe/Paris", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "mon", "ios", "mobile", "a"}

// fieldsSet is the set of fieldValues: two rules, the second with
// variants weighted weight and 100-weight.
func fieldsSet(v [len(fieldValues)]string, weight int) wire {
	eq := v[8]
	cond := &Condition{Device: []string{v[14]}, OS: []string{v[13]}, Browser: []string{v[6]}, Country: []string{v[5]},
		Language: []string{v[3]}, IP: []string{v[4]}, Query: []QueryMatch{{Name: v[7], Equals: &eq}},
		Time: &TimeWindow{TZ: v[9], From: v[10], Until: v[11], Days: []string{v[12]}}}
	return wire{Rules: []Rule{
		{Name: v[0], If: cond, URL: v[1], AppURL: v[2]},
		{If: &Condition{Query: []QueryMatch{{Name: v[7], Present: true}}}, Variants: []Variant{
			{Name: v[15], URL: v[1], Weight: weight}, {Name: "z", URL: "https://z.example/", Weight: 100 - weight}}},
	}}
}

// FuzzParseFields: FuzzParse's properties with one value of a valid set
// fuzzed (field picks which), so that the JSON is always well formed and
// what is fuzzed is the judging of that value.
func FuzzParseFields(f *testing.F) {
	for i, seed := range []string{"rule-1", "https://b.example/?a=1&b=<2>", "MyApp:x", "zh-Hant-CN-x-a",
		"::ffff:1.2.3.4", "ca", "Samsung Internet", "q q", "", "Asia/Tokyo", "2026-01-01T00:00:00+01:00",
		"9999-12-31T23:59:59Z", "SUN", "android", "Tablet", "b-_9"} {
		f.Add(uint8(i), seed, 30)
	}
	f.Add(uint8(2), "javascript:alert(1)", 1)
	f.Add(uint8(4), "fe80::1%eth0", 99)
	f.Add(uint8(10), "1969-12-31T23:59:59Z", 100)
	f.Fuzz(func(t *testing.T, field uint8, value string, weight int) {
		v := fieldValues
		v[int(field)%len(v)] = value
		data, err := json.Marshal(fieldsSet(v, weight))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(data, fuzzOpts)
		if err != nil {
			if _, ok := err.(*FieldError); !ok {
				t.Fatalf("error %v is a %T, not a *FieldError", err, err)
			}
			return
		}
		checkBounds(t, s.Rules(), s.Variants())
		out := normalised(t, s)
		again, err := Parse([]byte(out), fuzzOpts)
		if err != nil || normalised(t, again) != out || !reflect.DeepEqual(again.Rules(), s.Rules()) {
			t.Fatalf("the normalised form %s parses again to %v, %v", out, again, err)
		}
	})
}

// checkBounds checks a parsed set against the bounds of doc.go, written
// again here rather than calling the package's checks.
func checkBounds(t *testing.T, rules []Rule, variants []Variant) {
	t.Helper()
	if len(rules) > 50 {
		t.Fatalf("%d rules", len(rules))
	}
	names := map[string]bool{}
	for i, r := range rules {
		name := r.Name
		if name == "" {
			name = "rule-" + itoa(i+1)
		}
		if names[name] || utf8.RuneCountInString(name) > 64 {
			t.Fatalf("rule %d: name %q repeated or too long", i, name)
		}
		names[name] = true
		if (r.URL == "") == (len(r.Variants) == 0) {
			t.Fatalf("rule %d: url %q and %d variants", i, r.URL, len(r.Variants))
		}
		if r.URL != "" {
			checkDestination(t, r.URL)
		}
		if len(r.Variants) > 0 {
			checkVariants(t, r.Variants)
		}
		checkAppURL(t, r)
		if r.If != nil {
			checkCondition(t, r.If)
		}
	}
	if len(variants) > 0 {
		checkVariants(t, variants)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func checkDestination(t *testing.T, u string) {
	t.Helper()
	if len(u) > 2048 || exampleOnly(u) != nil || strings.ContainsFunc(u, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		t.Fatalf("destination %q is not one the oracle allows", u)
	}
}

func checkVariants(t *testing.T, vs []Variant) {
	t.Helper()
	if len(vs) < 2 || len(vs) > 10 {
		t.Fatalf("%d variants", len(vs))
	}
	sum, names := 0, map[string]bool{}
	for _, v := range vs {
		if v.Weight < 1 || v.Weight > 99 || names[v.Name] || len(v.Name) < 1 || len(v.Name) > 32 ||
			strings.Trim(v.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Fatalf("variant %+v", v)
		}
		names[v.Name] = true
		sum += v.Weight
		checkDestination(t, v.URL)
	}
	if sum != 100 {
		t.Fatalf("weights sum to %d", sum)
	}
}

func checkAppURL(t *testing.T, r Rule) {
	t.Helper()
	if r.AppURL == "" {
		return
	}
	scheme, _, _ := strings.Cut(r.AppURL, ":")
	if r.URL == "" || r.If == nil || len(r.If.OS) == 0 || len(r.AppURL) > 2048 || !strings.EqualFold(scheme, "myapp") {
		t.Fatalf("app_url %q on rule %+v", r.AppURL, r)
	}
	for _, os := range r.If.OS {
		if os != "ios" && os != "android" {
			t.Fatalf("app_url on a rule for %q", os)
		}
	}
}

func checkCondition(t *testing.T, c *Condition) {
	t.Helper()
	if len(c.Device) > 16 || len(c.OS) > 16 || len(c.Browser) > 16 || len(c.Country) > 250 ||
		len(c.Language) > 32 || len(c.IP) > 64 || len(c.Query) > 8 {
		t.Fatalf("a list over its bound: %+v", c)
	}
	for _, cc := range c.Country {
		if len(cc) != 2 || strings.ToUpper(cc) != cc || strings.Trim(cc, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			t.Fatalf("country %q", cc)
		}
	}
	for _, ip := range c.IP {
		if p, err := netip.ParsePrefix(ip); err != nil || p.Masked() != p || p.Addr().Is4In6() {
			t.Fatalf("ip %q: %v", ip, err)
		}
	}
	for _, q := range c.Query {
		if q.Name == "" || len(q.Name) > 128 || (q.Equals != nil) == q.Present || q.Equals != nil && len(*q.Equals) > 256 {
			t.Fatalf("query %+v", q)
		}
	}
	if w := c.Time; w != nil && w.From == "" && w.Until == "" && len(w.Days) == 0 && w.Hours == nil {
		t.Fatalf("an empty time condition: %+v", w)
	}
}
