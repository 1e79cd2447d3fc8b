package targeting

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// tenRules is a set of ten rules with UA, country, language, ip, query
// and time conditions, of which benchVisitor passes every condition but
// the language of the first nine: it matches the last, after reading all
// its values.
func tenRules() string {
	var rules []string
	for i := range 10 {
		lang := `["de-AT","it"]`
		if i == 9 {
			lang = `["en"]`
		}
		rules = append(rules, fmt.Sprintf(`{"if":{"device":["mobile","tablet"],"os":["ios","android"],"browser":["safari","chrome"],
			"country":["US","CA","FR"],"language":%s,"ip":["198.51.100.0/24","203.0.113.0/24","2001:db8::/32"],
			"query":[{"name":"utm_source","equals":"news"},{"name":"ref","present":true}],
			"time":{"tz":"Europe/Paris","days":["mon","tue","wed","thu","fri"],"hours":{"from":8,"until":20}}},
			"variants":[{"name":"a","url":"https://a%d.example/","weight":30},{"name":"b","url":"https://b%d.example/","weight":70}]}`, lang, i, i))
	}
	return `{"rules":[` + strings.Join(rules, ",") + `],
		"variants":[{"name":"x","url":"https://x.example/","weight":50},{"name":"y","url":"https://y.example/","weight":50}]}`
}

func benchVisitor() Visitor {
	return Visitor{
		Device: "mobile", OS: "android", Browser: "chrome", Country: "FR",
		AcceptLanguage: "fr-CH, fr;q=0.9, en-US;q=0.8, *;q=0.5",
		Addr:           netip.MustParseAddr("::ffff:203.0.113.77"),
		RawQuery:       "id=42&utm_medium=email&utm_source=news&utm_campaign=spring",
		Now:            time.Date(2026, 3, 3, 9, 30, 0, 0, time.UTC), // a Tuesday, 10:30 in Paris
		Key:            0x9e3779b97f4a7c15, Link: "spring26",
	}
}

// TestDecideAllocs: deciding allocates nothing, when the last of ten rules
// matches and when none does.
func TestDecideAllocs(t *testing.T) {
	s := mustParse(t, tenRules())
	v := benchVisitor()
	if d := s.Decide(&v); d.Rule != 9 || d.Variant < 0 {
		t.Fatalf("the benchmark visitor: %+v, want rule 9 and a variant", d)
	}
	miss := v
	miss.AcceptLanguage = "ja"
	if d := s.Decide(&miss); d.Rule != -1 || d.Variant < 0 {
		t.Fatalf("the missing visitor: %+v, want a link-level variant", d)
	}
	for name, v := range map[string]*Visitor{"match": &v, "miss": &miss} {
		if n := testing.AllocsPerRun(100, func() { s.Decide(v) }); n != 0 {
			t.Errorf("Decide (%s) allocates %.1f times", name, n)
		}
	}
}

func BenchmarkDecide10Rules(b *testing.B) {
	s := mustParse(b, tenRules())
	v := benchVisitor()
	b.ReportAllocs()
	for b.Loop() {
		s.Decide(&v)
	}
}

func BenchmarkDecideNoMatch(b *testing.B) {
	s := mustParse(b, tenRules())
	v := benchVisitor()
	v.AcceptLanguage = "ja"
	b.ReportAllocs()
	for b.Loop() {
		s.Decide(&v)
	}
}

func BenchmarkParse(b *testing.B) {
	data := []byte(tenRules())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, testOpts); err != nil {
			b.Fatal(err)
		}
	}
}
