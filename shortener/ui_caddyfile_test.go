package shortener

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

func TestUICaddyfile(t *testing.T) {
	h, err := parse("shortener {\napi /api\napi_key k-0123456789abcdef\nui /admin {\nsession_max_age 8h\nsession_idle 30m\n}\n}")
	if err != nil {
		t.Fatal(err)
	}
	if h.UI != "/admin" || h.UISessionMaxAge != caddy.Duration(8*time.Hour) || h.UISessionIdle != caddy.Duration(30*time.Minute) {
		t.Errorf("ui = %q %v %v", h.UI, h.UISessionMaxAge, h.UISessionIdle)
	}
	const keys = "api /api\napi_key k-0123456789abcdef\n"
	const secret = "s-0123456789abcdefghijklmnopqrstuv"
	for _, tc := range []struct{ input, want string }{
		{"ui\n", "wrong argument count"},
		{"ui /a /b\n", "wrong argument count"},
		{"ui admin\n", "invalid ui path 'admin': must start with / and not be /, at Testfile:4"},
		{"ui /\n", "invalid ui path '/'"},
		{"ui /api/admin\n", "ui path '/api/admin' and api path '/api' overlap, at Testfile:4"},
		{"ui /admin {\nsession_idle\n}\n", "wrong argument count"},
		{"ui /admin {\nsession_idle soon\n}\n", "invalid session_idle 'soon'"},
		{"ui /admin {\nsession_idle 30s\n}\n", "invalid session_idle 30s: want 1m0s to session_max_age, at Testfile:5"},
		{"ui /admin {\nsession_max_age 1h\nsession_idle 2h\n}\n", "invalid session_idle 2h0m0s: want 1m0s to session_max_age, at Testfile:6"},
		{"ui /admin {\nsession_max_age 800h\n}\n", "invalid session_max_age 800h0m0s: want 1m0s to 720h0m0s, at Testfile:5"},
		{"ui /admin {\nlifetime 1h\n}\n", "unrecognized ui setting 'lifetime'"},
		{"ui /admin {\nsession_idle 1h\nsession_idle 1h\n}\n", "duplicate ui setting 'session_idle'"},
		{"ui /admin\nui /other\n", "duplicate subdirective 'ui'"},
		{"ui /admin {\nsecret short\n}\n", "secret is 5 bytes long; at least 32 are required, at Testfile:5"},
		{"ui /admin {\nsecret\n}\n", "wrong argument count"},
		{"ui /admin {\nsecret " + secret + "\nsecret_file /etc/s\n}\n", "secret and secret_file both set: give one, at Testfile:6"},
		{"ui /admin {\nprevious_secret " + secret + "\n}\n", "previous_secret needs the new secret (secret or secret_file), at Testfile:5"},
		{"ui /admin {\nsecret " + secret + "\nprevious_secret " + secret + "\n}\n", "previous_secret is the same as secret, at Testfile:6"},
		{"ui /admin {\nsecret_file /etc/s\nprevious_secret short\n}\n", "previous_secret is 5 bytes long; at least 32 are required, at Testfile:6"},
	} {
		_, err := parse("shortener {\n" + keys + tc.input + "}")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.input, err, tc.want)
		}
	}
	h, err = parse("shortener {\n" + keys + "ui /admin {\nsecret {env.UI_SECRET}\nprevious_secret " + secret + "\n}\n}")
	if err != nil || h.UISecret != "{env.UI_SECRET}" || h.UIPreviousSecret != secret {
		t.Errorf("ui secrets: %v %q %q", err, h.UISecret, h.UIPreviousSecret)
	}
	if h, err := parse("shortener {\n" + keys + "ui /admin {\nsecret_file /etc/caddy/ui.key\n}\n}"); err != nil || h.UISecretFile != "/etc/caddy/ui.key" {
		t.Errorf("secret_file: %v", err)
	}
	if _, err := parse("shortener {\nui /admin\n}"); err == nil || !strings.Contains(err.Error(), "the ui needs the api") {
		t.Errorf("ui without api: %v", err)
	}
}
