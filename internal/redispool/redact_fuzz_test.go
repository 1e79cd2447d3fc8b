package redispool

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// FuzzRedactRedis embeds a random secret, correctly escaped, in each
// Redis URL form (user:password, a user name alone, :password, `?password=`,
// `&password=`), whole or broken (a bad database, an unknown option), and
// checks Describe, Redact and the errors of Validate, Get and Ping against
// the secret: none shows it. The secret starts and ends with "Qzx", which
// no message has otherwise, so its start or end showing in any form (raw,
// quoted, percent-encoded) is caught too.
func FuzzRedactRedis(f *testing.F) {
	for _, body := range []string{"a b c", "p@ss:w/rd?#&=", `se"cr\et`, "\x00\x01\t\n", "\u202e\xff", "%zz", ""} {
		for form := range 5 {
			for broken := range 3 {
				f.Add(body, uint8(form), uint8(broken))
			}
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(f)) // nothing listens
	f.Fuzz(func(t *testing.T, body string, form, broken uint8) {
		secret := "Qzx" + body + "Qzx"
		raw := redisURL(secret, form%5, broken%3, addr)
		for _, m := range redisMessages(t, Config{URL: raw, DialTimeout: caddy.Duration(200 * time.Millisecond)}) {
			if strings.Contains(m, "Qzx") {
				t.Fatalf("url %q (secret %q): message shows the secret: %s", raw, secret, m)
			}
		}
	})
}

// redisURL writes secret into URL form (0-4), broken by a bad database
// (1) or an unknown option (2), or whole (0) for a server at addr.
func redisURL(secret string, form, broken uint8, addr string) string {
	u := url.URL{Scheme: "redis", Host: addr, Path: "/0"}
	if broken == 1 {
		u.Path = "/notadb"
	}
	q := ""
	if broken == 2 {
		q = "nope=1&"
	}
	switch form {
	case 0:
		u.User = url.UserPassword("app", secret)
	case 1:
		u.User = url.User(secret)
	case 2:
		u.User = url.UserPassword("", secret)
	case 3:
		q += "password=" + url.QueryEscape(secret)
	default:
		q += "dial_timeout=1&password=" + url.QueryEscape(secret)
	}
	u.RawQuery = strings.TrimSuffix(q, "&")
	return u.String()
}
