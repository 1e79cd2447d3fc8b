package targeting

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestValidateJSON: what the JSON walk refuses, each naming its field.
func TestValidateJSON(t *testing.T) {
	ok := `{"url":"https://a.example/"}`
	checkValidation(t, testOpts, []validationCase{
		{"unknown top", `{"rule":[]}`, "rule"},
		{"unknown rule", `{"rules":[{"url":"https://a.example/","colour":"red"}]}`, "rules[0].colour"},
		{"unknown if", `{"rules":[` + ok + `,{"if":{"devices":["bot"]},"url":"https://a.example/"}]}`, "rules[1].if.devices"},
		{"unknown query", ifRule(`{"query":[{"name":"a","present":true,"regex":"x"}]}`), "rules[0].if.query[0].regex"},
		{"unknown hours", ifRule(`{"time":{"hours":{"from":1,"until":2,"tz":"UTC"}}}`), "rules[0].if.time.hours.tz"},
		{"unknown variant", `{"variants":[{"name":"a","url":"https://a.example/","weight":50,"wieght":1}]}`, "variants[0].wieght"},
		{"key in other case", `{"rules":[{"URL":"https://a.example/"}]}`, "rules[0].URL"},
		{"key twice", `{"rules":[{"url":"https://a.example/","url":"https://b.example/"}]}`, "rules[0].url"},
		{"key twice top", `{"rules":[],"rules":[` + ok + `]}`, "rules"},
		{"string for array", `{"rules":"all"}`, "rules"},
		{"object for array", `{"rules":{}}`, "rules"},
		{"number for string", `{"rules":[{"url":5}]}`, "rules[0].url"},
		{"string weight", `{"variants":[{"name":"a","url":"https://a.example/","weight":"50"}]}`, "variants[0].weight"},
		{"fraction weight", `{"variants":[{"name":"a","url":"https://a.example/","weight":50.5}]}`, "variants[0].weight"},
		{"exponent weight", `{"variants":[{"name":"a","url":"https://a.example/","weight":5e1}]}`, "variants[0].weight"},
		{"huge weight", `{"variants":[{"name":"a","url":"https://a.example/","weight":99999999999}]}`, "variants[0].weight"},
		{"string present", ifRule(`{"query":[{"name":"a","present":"yes"}]}`), "rules[0].if.query[0].present"},
		{"number in list", ifRule(`{"device":["bot",1]}`), "rules[0].if.device[1]"},
		{"null fields", `{"rules":[{"name":null,"if":null,"url":"https://a.example/","variants":null}],"variants":null}`, "-"},
		{"array top", `[]`, ""},
		{"string top", `"rules"`, ""},
		{"trailing data", `{"rules":[` + ok + `]} {}`, ""},
		{"syntax", `{"rules":[{"url":"https://a.example/",}]}`, "rules[0]"},
		{"cut", `{"rules":[{"url":"https://a.exa`, "rules[0].url"},
		{"invalid UTF-8", "{\"rules\":[{\"name\":\"a\xffb\",\"url\":\"https://a.example/\"}]}", "rules[0].name"},
		{"invalid UTF-8 key", "{\"rules\":[{\"n\xffame\":\"a\"}]}", "rules[0]"},
	})
}

// TestValidateSize: the input, and the set as normalised, hold at most
// MaxJSON bytes.
func TestValidateSize(t *testing.T) {
	base := rulesOf(1)
	padded := func(n int) string { return base[:len(base)-1] + strings.Repeat(" ", n-len(base)) + "}" }
	checkValidation(t, testOpts, []validationCase{
		{"64 KiB", padded(MaxJSON), "-"},
		{"64 KiB + 1", padded(MaxJSON + 1), ""},
		{"huge", padded(10 << 20), ""},
	})
	// json.Marshal writes '&' as \u0026: 25 URLs full of them fit as
	// given, not as normalised.
	var rules []string
	for range 25 {
		rules = append(rules, `{"url":"https://a.example/?`+strings.Repeat("a&", 1000)+`"}`)
	}
	in := `{"rules":[` + strings.Join(rules, ",") + `]}`
	if len(in) > MaxJSON {
		t.Fatalf("the input is %d bytes; the test needs one within %d", len(in), MaxJSON)
	}
	checkValidation(t, testOpts, []validationCase{{"normalised too big", in, ""}})
}

// TestNewFromStructs: New judges the structs the API decodes itself, and
// a Rules/Variants slice handed out is a copy.
func TestNewFromStructs(t *testing.T) {
	eq := "1"
	rules := []Rule{{Name: "q", If: &Condition{Query: []QueryMatch{{Name: "a", Equals: &eq}}, Time: &TimeWindow{Hours: &HourRange{0, 24}}}, URL: "https://a.example/"}}
	s, err := New(rules, []Variant{{"a", "https://a.example/", 50}, {"b", "https://b.example/", 50}}, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Rules()
	*got[0].If.Query[0].Equals = "2"
	got[0].If.Time.Hours.From = 5
	s.Variants()[0].Name = "z"
	if again, _ := json.Marshal(s.Rules()); string(again) != `[{"name":"q","if":{"query":[{"name":"a","equals":"1"}],"time":{"hours":{"from":0,"until":24}}},"url":"https://a.example/"}]` {
		t.Errorf("the set changed with a copy: %s", again)
	}
	if s.Variants()[0].Name != "a" {
		t.Error("the variants changed with a copy")
	}
	bad := []Rule{{URL: "https://a.example/", If: &Condition{Query: []QueryMatch{{Name: "a\xff", Present: true}}}}}
	if _, err := New(bad, nil, testOpts); err == nil || fieldOf(t, err) != "rules[0].if.query[0].name" {
		t.Errorf("invalid UTF-8 query name: %v", err)
	}
	if _, err := New(make([]Rule, 51), nil, testOpts); err == nil || fieldOf(t, err) != "rules" {
		t.Errorf("51 rules: %v", err)
	}
}
