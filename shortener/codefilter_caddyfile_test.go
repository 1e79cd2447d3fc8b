package shortener

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

func TestCaddyfileCodeFilter(t *testing.T) {
	for _, tc := range []struct {
		input string
		off   bool
		sync  time.Duration
	}{
		{"shortener {\ncode_filter on\n}", false, 0},
		{"shortener {\ncode_filter off\n}", true, 0},
		{"shortener {\ncode_filter_sync 500ms\n}", false, 500 * time.Millisecond},
		{"shortener {\ncode_filter on\ncode_filter_sync 5s\n}", false, 5 * time.Second},
	} {
		h, err := parse(tc.input)
		if err != nil {
			t.Errorf("parse(%q): %v", tc.input, err)
			continue
		}
		if h.CodeFilterOff != tc.off || time.Duration(h.CodeFilterSync) != tc.sync {
			t.Errorf("parse(%q) = off %v sync %v, want %v %v", tc.input, h.CodeFilterOff, time.Duration(h.CodeFilterSync), tc.off, tc.sync)
		}
	}
}

func TestCaddyfileCodeFilterErrors(t *testing.T) {
	for _, tc := range []struct{ input, want string }{
		{"shortener {\ncode_filter\n}", "wrong argument count"},
		{"shortener {\ncode_filter on off\n}", "wrong argument count"},
		{"shortener {\ncode_filter maybe\n}", "invalid code_filter 'maybe': want on or off"},
		{"shortener {\ncode_filter on\ncode_filter off\n}", "duplicate subdirective 'code_filter'"},
		{"shortener {\ncode_filter_sync\n}", "wrong argument count"},
		{"shortener {\ncode_filter_sync 1s 2s\n}", "wrong argument count"},
		{"shortener {\ncode_filter_sync soon\n}", "invalid code_filter_sync 'soon'"},
		{"shortener {\ncode_filter_sync 0s\n}", "invalid code_filter_sync '0s'"},
		{"shortener {\ncode_filter_sync 1s\ncode_filter_sync 2s\n}", "duplicate subdirective 'code_filter_sync'"},
	} {
		_, err := parse(tc.input)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.input, err, tc.want)
		}
	}
}

// code_filter_sync bounds how long a link can stay hidden: 100ms to 5s.
func TestValidateCodeFilterSync(t *testing.T) {
	for _, tc := range []struct {
		sync time.Duration
		ok   bool
	}{
		{0, true}, {MinCodeFilterSync, true}, {2 * time.Second, true}, {MaxCodeFilterSync, true},
		{MinCodeFilterSync - 1, false}, {MaxCodeFilterSync + 1, false}, {time.Hour, false}, {-time.Second, false},
	} {
		h := Handler{CodeFilterSync: caddy.Duration(tc.sync)}
		err := h.Validate()
		if tc.ok && err != nil {
			t.Errorf("Validate(code_filter_sync %v) = %v, want nil", tc.sync, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "invalid code_filter_sync")) {
			t.Errorf("Validate(code_filter_sync %v) = %v, want an invalid code_filter_sync error", tc.sync, err)
		}
	}
}
