package shortener

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCaddyfileDenyPrivate(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  *bool
		on    bool // after defaults
	}{
		{"shortener", nil, true},
		{"shortener {\ndeny_private on\n}", ptr(true), true},
		{"shortener {\ndeny_private off\n}", ptr(false), false},
	} {
		h, err := parse(tc.input)
		if err != nil {
			t.Errorf("parse(%q): %v", tc.input, err)
			continue
		}
		if (h.DenyPrivate == nil) != (tc.want == nil) || (h.DenyPrivate != nil && *h.DenyPrivate != *tc.want) {
			t.Errorf("parse(%q).DenyPrivate = %v, want %v", tc.input, h.DenyPrivate, tc.want)
		}
		if h.denyPrivate() != tc.on {
			t.Errorf("parse(%q): deny_private in force = %v, want %v", tc.input, h.denyPrivate(), tc.on)
		}
	}
	// JSON: absent is on; false is off.
	var h Handler
	if err := json.Unmarshal([]byte(`{"deny_private":false}`), &h); err != nil || h.denyPrivate() {
		t.Errorf(`{"deny_private":false}: %v, in force %v`, err, h.denyPrivate())
	}
}

func TestCaddyfileHostsErrors(t *testing.T) {
	for _, tc := range []struct{ input, want string }{
		{"shortener {\ndeny_private\n}", "wrong argument count"},
		{"shortener {\ndeny_private on off\n}", "wrong argument count"},
		{"shortener {\ndeny_private yes\n}", "invalid deny_private 'yes'"},
		{"shortener {\ndeny_private on\ndeny_private off\n}", "duplicate subdirective 'deny_private'"},
		{"shortener {\ndeny_hosts good.example a..b\n}", "invalid deny_hosts entry 'a..b'"},
		{"shortener {\ndeny_hosts *.10.0.0.1\n}", "invalid deny_hosts entry '*.10.0.0.1'"},
		{"shortener {\ndeny_hosts 256.1.1.1\n}", "invalid deny_hosts entry '256.1.1.1'"},
	} {
		_, err := parse(tc.input)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Testfile:") {
			t.Errorf("parse(%q) = %v, want an error with its line containing %q", tc.input, err, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
