package targeting

import (
	"fmt"
	"strings"
	"testing"
)

// jsonList is a JSON array of n strings made by f.
func jsonList(n int, f func(i int) string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = `"` + f(i) + `"`
	}
	return "[" + strings.Join(items, ",") + "]"
}

// ifRule is a set of one rule with the condition cond.
func ifRule(cond string) string {
	return `{"rules":[{"if":` + cond + `,"url":"https://a.example/"}]}`
}

// variantList is a JSON variant list with the weights given.
func variantList(weights ...int) string {
	var vs []string
	for i, w := range weights {
		vs = append(vs, fmt.Sprintf(`{"name":"v%d","url":"https://v%d.example/","weight":%d}`, i, i, w))
	}
	return "[" + strings.Join(vs, ",") + "]"
}

func country(i int) string  { return string([]byte{byte('A' + i/26), byte('A' + i%26)}) }
func language(i int) string { return string([]byte{'a', byte('a' + i/26), byte('a' + i%26)}) }

type validationCase struct {
	name, set string
	field     string // the field refused; "-" for none (accepted)
}

// checkValidation runs cases: each is accepted, or refused naming field.
func checkValidation(t *testing.T, opts Options, cases []validationCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.set), opts)
			switch {
			case tc.field == "-" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.field != "-" && err == nil:
				t.Errorf("accepted, want an error naming %q", tc.field)
			case tc.field != "-" && fieldOf(t, err) != tc.field:
				t.Errorf("error %q names %q, want %q", err, fieldOf(t, err), tc.field)
			}
		})
	}
}

// TestValidateConditions: each condition's bounds, just inside and just
// past, and its values.
func TestValidateConditions(t *testing.T) {
	browser := func(i int) string { return fmt.Sprintf("b%d", i) }
	ip := func(i int) string { return fmt.Sprintf("10.0.%d.0/24", i) }
	query := func(n int) string {
		var qs []string
		for i := range n {
			qs = append(qs, fmt.Sprintf(`{"name":"q%d","present":true}`, i))
		}
		return `{"query":[` + strings.Join(qs, ",") + `]}`
	}
	checkValidation(t, testOpts, []validationCase{
		{"device all", ifRule(`{"device":["mobile","tablet","desktop","tv","bot","other"]}`), "-"},
		{"device 17", ifRule(`{"device":` + jsonList(17, func(int) string { return "tv" }) + `}`), "rules[0].if.device"},
		{"device unknown", ifRule(`{"device":["mobile","phone"]}`), "rules[0].if.device[1]"},
		{"device twice", ifRule(`{"device":["mobile","Mobile"]}`), "rules[0].if.device[1]"},
		{"os all", ifRule(`{"os":["ios","android","windows","macos","linux","chromeos","other"]}`), "-"},
		{"os unknown", ifRule(`{"os":["bsd"]}`), "rules[0].if.os[0]"},
		{"browser 16", ifRule(`{"browser":` + jsonList(16, browser) + `}`), "-"},
		{"browser 17", ifRule(`{"browser":` + jsonList(17, browser) + `}`), "rules[0].if.browser"},
		{"browser 32 chars", ifRule(`{"browser":["` + strings.Repeat("b", 32) + `"]}`), "-"},
		{"browser 33 chars", ifRule(`{"browser":["` + strings.Repeat("b", 33) + `"]}`), "rules[0].if.browser[0]"},
		{"browser empty", ifRule(`{"browser":[""]}`), "rules[0].if.browser[0]"},
		{"browser chars", ifRule(`{"browser":["chrome","samsung internet","x_y-1","chrome!"]}`), "rules[0].if.browser[3]"},
		{"country 250", ifRule(`{"country":` + jsonList(250, country) + `}`), "-"},
		{"country 251", ifRule(`{"country":` + jsonList(251, country) + `}`), "rules[0].if.country"},
		{"country three letters", ifRule(`{"country":["USA"]}`), "rules[0].if.country[0]"},
		{"country digit", ifRule(`{"country":["U1"]}`), "rules[0].if.country[0]"},
		{"country twice", ifRule(`{"country":["us","US"]}`), "rules[0].if.country[1]"},
		{"language 32", ifRule(`{"language":` + jsonList(32, language) + `}`), "-"},
		{"language 33", ifRule(`{"language":` + jsonList(33, language) + `}`), "rules[0].if.language"},
		{"language 64 bytes", ifRule(`{"language":["en` + strings.Repeat("-abcdefg", 7) + `-abcde"]}`), "-"},
		{"language 65 bytes", ifRule(`{"language":["en` + strings.Repeat("-abcdefg", 7) + `-abcdef"]}`), "rules[0].if.language[0]"},
		{"language forms", ifRule(`{"language":["en","fr-CA","zh-Hant-TW","de-CH-x-phonebk","es-419","sgn-BE-FR"]}`), "-"},
		{"language star", ifRule(`{"language":["*"]}`), "rules[0].if.language[0]"},
		{"language grandfathered", ifRule(`{"language":["i-klingon"]}`), "rules[0].if.language[0]"},
		{"language one letter", ifRule(`{"language":["e"]}`), "rules[0].if.language[0]"},
		{"language four letters", ifRule(`{"language":["engl"]}`), "rules[0].if.language[0]"},
		{"language digit first", ifRule(`{"language":["e1"]}`), "rules[0].if.language[0]"},
		{"language trailing dash", ifRule(`{"language":["en-"]}`), "rules[0].if.language[0]"},
		{"language long subtag", ifRule(`{"language":["en-abcdefghi"]}`), "rules[0].if.language[0]"},
		{"language non-ASCII", ifRule(`{"language":["\u212Aa"]}`), "rules[0].if.language[0]"},
		{"language twice", ifRule(`{"language":["fr-ca","FR-CA"]}`), "rules[0].if.language[1]"},
		{"ip 64", ifRule(`{"ip":` + jsonList(64, ip) + `}`), "-"},
		{"ip 65", ifRule(`{"ip":` + jsonList(65, ip) + `}`), "rules[0].if.ip"},
		{"ip forms", ifRule(`{"ip":["203.0.113.0/24","2001:db8::/32","198.51.100.7","::1","::ffff:192.0.2.1"]}`), "-"},
		{"ip bits", ifRule(`{"ip":["1.2.3.4/33"]}`), "rules[0].if.ip[0]"},
		{"ip zone", ifRule(`{"ip":["fe80::1%eth0"]}`), "rules[0].if.ip[0]"},
		{"ip mapped short", ifRule(`{"ip":["::ffff:0:0/95"]}`), "rules[0].if.ip[0]"},
		{"ip octet", ifRule(`{"ip":["1.2.3.256"]}`), "rules[0].if.ip[0]"},
		{"ip name", ifRule(`{"ip":["localhost"]}`), "rules[0].if.ip[0]"},
		{"ip twice masked", ifRule(`{"ip":["10.1.2.3/8","10.0.0.0/8"]}`), "rules[0].if.ip[1]"},
		{"ip twice mapped", ifRule(`{"ip":["1.2.3.4","::ffff:1.2.3.4"]}`), "rules[0].if.ip[1]"},
		{"query 8", ifRule(query(8)), "-"},
		{"query 9", ifRule(query(9)), "rules[0].if.query"},
		{"query name 128", ifRule(`{"query":[{"name":"` + strings.Repeat("n", 128) + `","present":true}]}`), "-"},
		{"query name 129", ifRule(`{"query":[{"name":"` + strings.Repeat("n", 129) + `","present":true}]}`), "rules[0].if.query[0].name"},
		{"query name empty", ifRule(`{"query":[{"name":"","present":true}]}`), "rules[0].if.query[0].name"},
		{"query equals 256", ifRule(`{"query":[{"name":"n","equals":"` + strings.Repeat("v", 256) + `"}]}`), "-"},
		{"query equals 257", ifRule(`{"query":[{"name":"n","equals":"` + strings.Repeat("v", 257) + `"}]}`), "rules[0].if.query[0].equals"},
		{"query both", ifRule(`{"query":[{"name":"n","equals":"v","present":true}]}`), "rules[0].if.query[0].present"},
		{"query neither", ifRule(`{"query":[{"name":"n"}]}`), "rules[0].if.query[0]"},
		{"query present false", ifRule(`{"query":[{"name":"n","present":false}]}`), "rules[0].if.query[0]"},
		{"query twice", ifRule(`{"query":[{"name":"n","equals":"v"},{"name":"n","equals":"w"},{"name":"n","equals":"v"}]}`), "rules[0].if.query[2]"},
	})
}

// TestValidateTime: a time condition's fields.
func TestValidateTime(t *testing.T) {
	tw := func(s string) string { return ifRule(`{"time":` + s + `}`) }
	checkValidation(t, testOpts, []validationCase{
		{"full", tw(`{"tz":"Europe/Paris","from":"2026-01-01T00:00:00Z","until":"2026-02-01T00:00:00+01:00","days":["mon","Tue"],"hours":{"from":9,"until":17}}`), "-"},
		{"empty", tw(`{}`), "rules[0].if.time"},
		{"tz only", tw(`{"tz":"UTC"}`), "rules[0].if.time"},
		{"tz unknown", tw(`{"tz":"Mars/Olympus","days":["mon"]}`), "rules[0].if.time.tz"},
		{"tz local", tw(`{"tz":"Local","days":["mon"]}`), "rules[0].if.time.tz"},
		{"tz path", tw(`{"tz":"../../etc/passwd","days":["mon"]}`), "rules[0].if.time.tz"},
		{"tz long", tw(`{"tz":"` + strings.Repeat("A", 65) + `","days":["mon"]}`), "rules[0].if.time.tz"},
		{"from bad", tw(`{"from":"2026-01-01"}`), "rules[0].if.time.from"},
		{"until bad", tw(`{"until":"tomorrow"}`), "rules[0].if.time.until"},
		{"from 1970", tw(`{"from":"1970-01-01T00:00:00Z"}`), "-"},
		{"from 1969", tw(`{"from":"1970-01-01T00:59:59+01:00"}`), "rules[0].if.time.from"},
		{"until 9999", tw(`{"until":"9999-12-31T23:59:59.999999999Z"}`), "-"},
		{"until 10000", tw(`{"until":"9999-12-31T23:00:00-01:00"}`), "rules[0].if.time.until"},
		{"until equals from", tw(`{"from":"2026-01-01T01:00:00+01:00","until":"2026-01-01T00:00:00Z"}`), "rules[0].if.time.until"},
		{"until just after", tw(`{"from":"2026-01-01T00:00:00Z","until":"2026-01-01T00:00:00.000000001Z"}`), "-"},
		{"days 7", tw(`{"days":["mon","tue","wed","thu","fri","sat","sun"]}`), "-"},
		{"days 8", tw(`{"days":["mon","tue","wed","thu","fri","sat","sun","mon"]}`), "rules[0].if.time.days"},
		{"day name", tw(`{"days":["monday"]}`), "rules[0].if.time.days[0]"},
		{"day twice", tw(`{"days":["sun","SUN"]}`), "rules[0].if.time.days[1]"},
		{"hours 0-1", tw(`{"hours":{"from":0,"until":1}}`), "-"},
		{"hours 23-24", tw(`{"hours":{"from":23,"until":24}}`), "-"},
		{"hours from -1", tw(`{"hours":{"from":-1,"until":5}}`), "rules[0].if.time.hours.from"},
		{"hours from 24", tw(`{"hours":{"from":24,"until":24}}`), "rules[0].if.time.hours.from"},
		{"hours until 0", tw(`{"hours":{"from":0,"until":0}}`), "rules[0].if.time.hours.until"},
		{"hours until 25", tw(`{"hours":{"from":0,"until":25}}`), "rules[0].if.time.hours.until"},
		{"hours until missing", tw(`{"hours":{"from":3}}`), "rules[0].if.time.hours.until"},
		{"hours reversed", tw(`{"hours":{"from":17,"until":9}}`), "rules[0].if.time.hours.until"},
		{"hours empty", tw(`{"hours":{"from":5,"until":5}}`), "rules[0].if.time.hours.until"},
	})
}

// TestGeoIPOff: without a GeoIP database a country condition is refused.
func TestGeoIPOff(t *testing.T) {
	opts := testOpts
	opts.GeoIP = false
	checkValidation(t, opts, []validationCase{
		{"country", `{"rules":[{"url":"https://a.example/"},{"if":{"country":["FR"]},"url":"https://b.example/"}]}`, "rules[1].if.country"},
		{"others", ifRule(`{"device":["mobile"],"language":["fr"]}`), "-"},
	})
}
