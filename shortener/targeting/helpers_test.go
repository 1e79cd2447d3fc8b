package targeting

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// exampleOnly is the URL policy of the tests: https URLs whose host ends
// in ".example".
func exampleOnly(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || !strings.HasSuffix(u.Hostname(), ".example") {
		return errors.New("only https://*.example URLs are allowed")
	}
	return nil
}

var testOpts = Options{CheckURL: exampleOnly, AppSchemes: []string{"myapp", "FB"}, GeoIP: true}

// mustParse parses a rule set the test expects to be valid.
func mustParse(t testing.TB, data string) *Set {
	t.Helper()
	s, err := Parse([]byte(data), testOpts)
	if err != nil {
		t.Fatalf("Parse(%s): %v", data, err)
	}
	return s
}

// oneRule is a set of one rule with the condition cond (JSON) and the url
// https://hit.example/.
func oneRule(t testing.TB, cond string) *Set {
	t.Helper()
	return mustParse(t, `{"rules":[{"if":`+cond+`,"url":"https://hit.example/"}]}`)
}

// fieldOf returns err's field, failing unless err is a *FieldError.
func fieldOf(t testing.TB, err error) string {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FieldError", err, err)
	}
	return fe.Field
}

// normalised is the JSON of a set's normalised form.
func normalised(t testing.TB, s *Set) string {
	t.Helper()
	b, err := json.Marshal(wire{s.Rules(), s.Variants()})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
