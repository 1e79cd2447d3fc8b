package targeting

import (
	"fmt"
	"strings"
	"testing"
)

// rulesOf is a set of n unconditional rules.
func rulesOf(n int) string {
	rs := make([]string, n)
	for i := range rs {
		rs[i] = fmt.Sprintf(`{"url":"https://r%d.example/"}`, i)
	}
	return `{"rules":[` + strings.Join(rs, ",") + `]}`
}

// urlOf is an https URL of n bytes the test policy accepts.
func urlOf(n int) string {
	const base = "https://a.example/"
	return base + strings.Repeat("p", n-len(base))
}

// TestValidateRules: a rule's name, destination and variants.
func TestValidateRules(t *testing.T) {
	rule := func(r string) string { return `{"rules":[` + r + `]}` }
	checkValidation(t, testOpts, []validationCase{
		{"50 rules", rulesOf(50), "-"},
		{"51 rules", rulesOf(51), "rules"},
		{"name 64", rule(`{"name":"` + strings.Repeat("é", 64) + `","url":"https://a.example/"}`), "-"},
		{"name 65", rule(`{"name":"` + strings.Repeat("é", 65) + `","url":"https://a.example/"}`), "rules[0].name"},
		{"name control", rule(`{"name":"a\tb","url":"https://a.example/"}`), "rules[0].name"},
		{"name bidi", rule(`{"name":"a\u202eb","url":"https://a.example/"}`), "rules[0].name"},
		{"name twice", rule(`{"name":"x","url":"https://a.example/"},{"url":"https://b.example/"},{"name":"x","url":"https://c.example/"}`), "rules[2].name"},
		{"name own default", rule(`{"url":"https://a.example/"},{"name":"rule-2","url":"https://b.example/"}`), "-"},
		{"name another default", rule(`{"name":"rule-2","url":"https://a.example/"},{"url":"https://b.example/"}`), "rules[0].name"},
		{"name like a default", rule(`{"name":"rule-02","url":"https://a.example/"},{"name":"rule-0","url":"https://b.example/"},{"name":"rule-","url":"https://c.example/"}`), "-"},
		{"url 2048", rule(`{"url":"` + urlOf(2048) + `"}`), "-"},
		{"url 2049", rule(`{"url":"` + urlOf(2049) + `"}`), "rules[0].url"},
		{"url policy", rule(`{"url":"http://a.example/"}`), "rules[0].url"},
		{"url space", rule(`{"url":"https://a.example/a b"}`), "rules[0].url"},
		{"url non-ASCII", rule(`{"url":"https://a.example/é"}`), "rules[0].url"},
		{"url and variants", rule(`{"url":"https://a.example/","variants":` + variantList(50, 50) + `}`), "rules[0].variants"},
		{"no destination", rule(`{"name":"x"}`), "rules[0]"},
		{"null rule", `{"rules":[null]}`, "rules[0]"},
		{"variants 1", rule(`{"variants":` + variantList(100) + `}`), "rules[0].variants"},
		{"variants 2", rule(`{"variants":` + variantList(1, 99) + `}`), "-"},
		{"variants 10", rule(`{"variants":` + variantList(10, 10, 10, 10, 10, 10, 10, 10, 10, 10) + `}`), "-"},
		{"variants 11", rule(`{"variants":` + variantList(10, 10, 10, 10, 10, 10, 10, 10, 10, 5, 5) + `}`), "rules[0].variants"},
		{"weight 0", rule(`{"variants":` + variantList(0, 100) + `}`), "rules[0].variants[0].weight"},
		{"weight 100", rule(`{"variants":` + variantList(1, 100) + `}`), "rules[0].variants[1].weight"},
		{"weights 90", rule(`{"variants":` + variantList(30, 60) + `}`), "rules[0].variants"},
		{"weights 101", rule(`{"variants":` + variantList(31, 70) + `}`), "rules[0].variants"},
		{"link variants", `{"variants":` + variantList(50, 50) + `}`, "-"},
		{"link variants 1", `{"variants":` + variantList(100) + `}`, "variants"},
		{"link weight", `{"variants":` + variantList(50, -50, 100) + `}`, "variants[1].weight"},
	})
}

// TestValidateVariants: a variant's name and url.
func TestValidateVariants(t *testing.T) {
	pair := func(name0, url1 string) string {
		return `{"variants":[{"name":"` + name0 + `","url":"https://a.example/","weight":50},{"name":"b","url":"` + url1 + `","weight":50}]}`
	}
	checkValidation(t, testOpts, []validationCase{
		{"name 32", pair(strings.Repeat("n", 32), "https://b.example/"), "-"},
		{"name 33", pair(strings.Repeat("n", 33), "https://b.example/"), "variants[0].name"},
		{"name chars", pair("A-z_09", "https://b.example/"), "-"},
		{"name dot", pair("a.b", "https://b.example/"), "variants[0].name"},
		{"name empty", pair("", "https://b.example/"), "variants[0].name"},
		{"name twice", pair("b", "https://b.example/"), "variants[1].name"},
		{"url empty", pair("a", ""), "variants[1].url"},
		{"url policy", pair("a", "https://b.test/"), "variants[1].url"},
		{"url 2049", pair("a", urlOf(2049)), "variants[1].url"},
	})
}

// TestValidateAppURL: app_url sits beside url on a rule for iOS and/or
// Android, with an allowed scheme.
func TestValidateAppURL(t *testing.T) {
	app := func(os, extra string) string {
		return `{"rules":[{"if":{"os":` + os + `},"url":"https://store.example/"` + extra + `}]}`
	}
	appURL := func(u string) string { return `,"app_url":"` + u + `"` }
	checkValidation(t, testOpts, []validationCase{
		{"ios", app(`["ios"]`, appURL("myapp://open/item/42")), "-"},
		{"ios and android", app(`["android","ios"]`, appURL("fb://profile/1")), "-"},
		{"scheme any case", app(`["ios"]`, appURL("MyApp://x")), "-"},
		{"app_url 2048", app(`["ios"]`, appURL("myapp://"+strings.Repeat("x", 2040))), "-"},
		{"app_url 2049", app(`["ios"]`, appURL("myapp://"+strings.Repeat("x", 2041))), "rules[0].app_url"},
		{"os with macos", app(`["ios","macos"]`, appURL("myapp://x")), "rules[0].app_url"},
		{"no os", `{"rules":[{"if":{"device":["mobile"]},"url":"https://a.example/","app_url":"myapp://x"}]}`, "rules[0].app_url"},
		{"no if", `{"rules":[{"url":"https://a.example/","app_url":"myapp://x"}]}`, "rules[0].app_url"},
		{"with variants", `{"rules":[{"if":{"os":["ios"]},"app_url":"myapp://x","variants":` + variantList(50, 50) + `}]}`, "rules[0].app_url"},
		{"scheme not listed", app(`["ios"]`, appURL("other://x")), "rules[0].app_url"},
		{"no scheme", app(`["ios"]`, appURL("/open/item")), "rules[0].app_url"},
		{"scheme only", app(`["ios"]`, appURL("myapp:")), "rules[0].app_url"},
		{"https not listed", app(`["ios"]`, appURL("https://a.example/app")), "rules[0].app_url"},
		{"space", app(`["ios"]`, appURL("myapp://a b")), "rules[0].app_url"},
	})
	opts := testOpts
	opts.AppSchemes = []string{"myapp", "https", "javascript"}
	checkValidation(t, opts, []validationCase{
		{"universal link", app(`["ios"]`, appURL("https://a.example/app")), "-"},
		{"universal link policy", app(`["ios"]`, appURL("https://a.test/app")), "rules[0].app_url"},
		{"javascript listed", app(`["ios"]`, appURL("javascript:alert(1)")), "rules[0].app_url"},
	})
}

// TestValidateDefaultPolicy: without CheckURL, any absolute http(s) URL
// with a host is a destination.
func TestValidateDefaultPolicy(t *testing.T) {
	checkValidation(t, Options{}, []validationCase{
		{"http", `{"rules":[{"url":"http://example.com/x?y=1"}]}`, "-"},
		{"HTTPS", `{"rules":[{"url":"HTTPS://example.com"}]}`, "-"},
		{"relative", `{"rules":[{"url":"/x"}]}`, "rules[0].url"},
		{"ftp", `{"rules":[{"url":"ftp://example.com/"}]}`, "rules[0].url"},
		{"no host", `{"rules":[{"url":"https:///x"}]}`, "rules[0].url"},
		{"port only", `{"rules":[{"url":"https://:443/x"}]}`, "rules[0].url"},
		{"bad escape", `{"rules":[{"url":"https://example.com/%zz"}]}`, "rules[0].url"},
	})
}
