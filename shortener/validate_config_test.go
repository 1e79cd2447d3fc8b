package shortener

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// TestValidateOncePerLoad loads handlers as Caddy does (Provision, then
// Validate) and counts the runs of validate: one per load, valid or not.
func TestValidateOncePerLoad(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    Handler
		ok   bool
	}{
		{"valid", Handler{Path: filepath.Join(t.TempDir(), "links.db"), ClicksOff: true}, true},
		{"invalid", Handler{Store: "postgres"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			h := tc.h
			h.onValidate = func() { runs++ }
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			err := h.Provision(ctx)
			if err == nil {
				defer h.Cleanup()
				err = h.Validate()
			}
			if (err == nil) != tc.ok {
				t.Errorf("load: %v, want ok=%v", err, tc.ok)
			}
			if runs != 1 {
				t.Errorf("validate ran %d times in one load, want 1", runs)
			}
		})
	}
}

// A setting the Caddyfile reads well but validate refuses is reported with
// its line.
func TestValidateNamesCaddyfileLine(t *testing.T) {
	for _, tc := range []struct{ input, want string }{
		{"shortener {\nstatus 200\n}", "Testfile:2"},
		{"shortener {\ncodes sequential\ncode_length 40\n}", "Testfile:3"},
		{"shortener {\nstore postgres\n}", "Testfile:2"},
		{"shortener {\napi /api\napi_key 0123456789abcdef\napi_key short\n}", "Testfile:4"},
		{"shortener {\ndeny_hosts ok.example\ndeny_hosts a..b\n}", "Testfile:3"},
		{"shortener {\napi /api\napi_read_key 0123456789abcdef\napi_read_key short\n}", "Testfile:4"},
		{"shortener {\napi_read_key 0123456789abcdef\n}", "Testfile:2"},
		{"shortener {\napi /api\napi_key k-0123456789abcdef\n\napi_read_key r-0123456789abcdef\napi_read_key k-0123456789abcdef\n}", "Testfile:6"},
		{"shortener {\nclicks_retention 1h\n}", "Testfile:2"},
	} {
		_, err := parse(tc.input)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error at %s", tc.input, err, tc.want)
		}
	}
}
