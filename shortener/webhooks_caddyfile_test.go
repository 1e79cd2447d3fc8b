package shortener

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// TestCaddyfileWebhooks: the webhooks block and its settings, and each
// bad one refused at load with its line.
func TestCaddyfileWebhooks(t *testing.T) {
	h, err := parse("shortener {\n api /api\n api_key 0123456789abcdef0123\n webhooks {\n  allow_private 10.0.0.0/8 192.168.1.5\n  allow_private fd00::/8\n" +
		"  timeout 5s\n  concurrency 4\n  retention 48h\n }\n}")
	if err != nil {
		t.Fatal(err)
	}
	want := WebhooksConfig{AllowPrivate: []string{"10.0.0.0/8", "192.168.1.5", "fd00::/8"}, Timeout: caddy.Duration(5 * time.Second),
		Concurrency: 4, Retention: caddy.Duration(48 * time.Hour)}
	if h.Webhooks == nil || strings.Join(h.Webhooks.AllowPrivate, " ") != strings.Join(want.AllowPrivate, " ") ||
		h.Webhooks.Timeout != want.Timeout || h.Webhooks.Concurrency != 4 || h.Webhooks.Retention != want.Retention {
		t.Errorf("parsed %+v, want %+v", h.Webhooks, want)
	}
	if h, err := parse("shortener {\n api /api\n api_key 0123456789abcdef0123\n webhooks\n}"); err != nil || h.Webhooks == nil {
		t.Errorf("a bare webhooks: %+v, %v", h.Webhooks, err)
	}
	for _, tc := range []struct{ input, want string }{
		{"shortener {\n webhooks\n}", "webhooks are managed through the API: set api, at Testfile:2"},
		{"shortener {\n api /api\n api_key 0123456789abcdef0123\n webhooks on\n}", "wrong argument count"},
		{"shortener {\n api /api\n api_key 0123456789abcdef0123\n webhooks {\n  bogus 1\n }\n}", "unrecognized webhooks setting 'bogus'"},
		{"shortener {\n api /api\n api_key 0123456789abcdef0123\n webhooks {\n  allow_private 10.0.0.0/33\n }\n}", "10.0.0.0/33\" is not a CIDR prefix or an address, at Testfile:5"},
		{"shortener {\n api /api\n api_key 0123456789abcdef0123\n webhooks {\n  allow_private private\n }\n}", `"private" is not a CIDR prefix or an address`},
		{"shortener {\n api /api\n api_key 0123456789abcdef0123\n webhooks {\n  timeout 2m\n }\n}", "timeout 2m0s is not between 0 and 1m0s, at Testfile:5"},
		{"shortener {\n api /api\n api_key 0123456789abcdef0123\n webhooks {\n  timeout -1s\n }\n}", "timeout"},
		{"shortener {\n api /api\n api_key 0123456789abcdef0123\n webhooks {\n  concurrency 65\n }\n}", "concurrency 65 is not 1 to 64, at Testfile:5"},
		{"shortener {\n api /api\n api_key 0123456789abcdef0123\n webhooks {\n  retention 10m\n }\n}", "retention 10m0s is shorter than 1h0m0s, at Testfile:5"},
		{"shortener {\n api /api\n api_key 0123456789abcdef0123\n webhooks {\n  timeout 1s\n  timeout 2s\n }\n}", "duplicate"},
	} {
		_, err := parse(tc.input)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.input, err, tc.want)
		}
	}
}
