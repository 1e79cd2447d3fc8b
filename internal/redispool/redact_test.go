package redispool

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// redisMessages returns every message a config can reach: Describe,
// Redact, and the errors of Validate, Options and Ping (connect) when
// they fail.
func redisMessages(t *testing.T, cfg Config) []string {
	t.Helper()
	msgs := []string{cfg.Describe(), Redact(cfg.URL)}
	if err := cfg.Validate(); err != nil {
		return append(msgs, err.Error())
	}
	c, err := Get(cfg)
	if err != nil {
		return append(msgs, err.Error())
	}
	defer c.Release()
	if err := Ping(context.Background(), c, cfg, time.Second); err != nil {
		msgs = append(msgs, err.Error())
	}
	return msgs
}

// A username without a password (`redis://secret@host`, which many
// clients read as the password), a user:password pair, a `?password=` or
// `&password=` query and an opaque URL never show in Redact, Describe or
// the errors of a URL that does not parse or a server that does not
// answer. Every secret holds "qzx", which no message has otherwise.
func TestRedactRedisSecretForms(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)) // nothing listens
	for _, tc := range []struct{ name, url string }{
		{"username only", "redis://qzx1@" + addr + "/0"},
		{"username only, bad db", "redis://qzx1@" + addr + "/notadb"},
		{"username only, unix", "unix://qzx1@/tmp/none.sock"},
		{"user and password", "redis://app:qzx1@" + addr + "/0"},
		{"query password", "redis://" + addr + "/0?password=qzx1"},
		{"query password after another", "redis://" + addr + "/0?dial_timeout=1&password=qzx1"},
		{"query password, encoded key", "redis://" + addr + "/0?pass%77ord=qzx1"},
		{"query password, bad option", "redis://" + addr + "/0?password=qzx1&nope=1"},
		{"fragment", "redis://" + addr + "/0#qzx1"},
		{"opaque", "redis:qzx1@" + addr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range redisMessages(t, Config{URL: tc.url, DialTimeout: caddy.Duration(200 * time.Millisecond)}) {
				if strings.Contains(strings.ToLower(m), "qzx") {
					t.Errorf("url %s: message shows the secret: %s", tc.url, m)
				}
			}
		})
	}
}
