package shortener

import (
	"fmt"
	"strings"
	"testing"
)

// TestCaddyfileForwardQuery: forward_query on|off sets the JSON field
// (default off); a bad value or a missing one is an error naming its line.
func TestCaddyfileForwardQuery(t *testing.T) {
	for in, want := range map[string]bool{
		"shortener":                           false,
		"shortener {\n\tforward_query on\n}":  true,
		"shortener {\n\tforward_query off\n}": false,
	} {
		h, err := parse(in)
		if err != nil || h.ForwardQuery != want {
			t.Errorf("parse(%q): ForwardQuery = %v, %v; want %v", in, h.ForwardQuery, err, want)
		}
	}
	for in, want := range map[string]string{ // and the line: Testfile:<n>
		"shortener {\n\tforward_query yes\n}":                     "invalid forward_query 'yes': want on or off",
		"shortener {\n\tforward_query\n}":                         "wrong argument count",
		"shortener {\n\tforward_query on off\n}":                  "wrong argument count",
		"shortener {\n\tforward_query on\n\tforward_query off\n}": "duplicate subdirective 'forward_query'",
	} {
		_, err := parse(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Testfile:"+fmt.Sprint(strings.Count(in, "\n"))) {
			t.Errorf("parse(%q) = %v, want an error with %q and its line", in, err, want)
		}
	}
}
