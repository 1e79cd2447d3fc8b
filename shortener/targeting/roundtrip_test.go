package targeting

import (
	"encoding/json"
	"reflect"
	"testing"
)

// richSet holds every field, most in a form normalisation rewrites.
const richSet = `{"rules":[
	{"name":"iPhone users","if":{
		"device":["Mobile","tablet"],"os":["IOS","android"],"browser":["Chrome","samsung internet"],
		"country":["us","Ca"],"language":["EN","fr-ca","zh-hant-tw","de-ch-X-Phonebk"],
		"ip":["203.0.113.9/24","2001:DB8::1/32","198.51.100.7","::ffff:192.0.2.1"],
		"query":[{"name":"utm_source","equals":"news"},{"name":"ref","present":true},{"name":"e","equals":""}],
		"time":{"tz":"Europe/Paris","from":"2026-01-01T00:00:00+01:00","until":"2026-02-01T00:00:00.5Z",
			"days":["MON","tue"],"hours":{"from":9,"until":17}}},
	 "url":"https://example.example/ios?a=1&b=<2>","app_url":"MyApp://open/item/42"},
	{"if":{"time":{"days":["sun"]}},"variants":[{"name":"a","url":"https://a.example/","weight":30},{"name":"b","url":"https://b.example/","weight":70}]},
	{"name":"all","if":{},"url":"https://all.example/"}],
 "variants":[{"name":"x","url":"https://x.example/","weight":1},{"name":"y","url":"https://y.example/","weight":99}]}`

// richNormalised is richSet as Rules and Variants give it.
const richNormalised = `{"rules":[{"name":"iPhone users","if":{"device":["mobile","tablet"],"os":["ios","android"],` +
	`"browser":["chrome","samsung internet"],"country":["US","CA"],"language":["en","fr-CA","zh-Hant-TW","de-CH-x-phonebk"],` +
	`"ip":["203.0.113.0/24","2001:db8::/32","198.51.100.7/32","192.0.2.1/32"],` +
	`"query":[{"name":"utm_source","equals":"news"},{"name":"ref","present":true},{"name":"e","equals":""}],` +
	`"time":{"tz":"Europe/Paris","from":"2025-12-31T23:00:00Z","until":"2026-02-01T00:00:00.5Z","days":["mon","tue"],"hours":{"from":9,"until":17}}},` +
	`"url":"https://example.example/ios?a=1\u0026b=\u003c2\u003e","app_url":"MyApp://open/item/42"},` +
	`{"if":{"time":{"days":["sun"]}},"variants":[{"name":"a","url":"https://a.example/","weight":30},{"name":"b","url":"https://b.example/","weight":70}]},` +
	`{"name":"all","url":"https://all.example/"}],` +
	`"variants":[{"name":"x","url":"https://x.example/","weight":1},{"name":"y","url":"https://y.example/","weight":99}]}`

// TestRoundTrip: Parse, Rules/Variants, json.Marshal and Parse again give
// the same normalised set.
func TestRoundTrip(t *testing.T) {
	s := mustParse(t, richSet)
	first := normalised(t, s)
	if first != richNormalised {
		t.Errorf("normalised:\n%s\nwant\n%s", first, richNormalised)
	}
	again := mustParse(t, first)
	if second := normalised(t, again); second != first {
		t.Errorf("parsed again:\n%s\nwant\n%s", second, first)
	}
	if !reflect.DeepEqual(s.Rules(), again.Rules()) || !reflect.DeepEqual(s.Variants(), again.Variants()) {
		t.Error("the structs differ after a round trip")
	}
	// Each Rule and Variant marshals and decodes to itself.
	for _, r := range s.Rules() {
		b, _ := json.Marshal(r)
		var back Rule
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, r) {
			t.Errorf("rule %s: decoded %+v, %v", b, back, err)
		}
	}
}
