package pgpool

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// FuzzRedactPostgres embeds a random password, correctly escaped, in each
// DSN form (keyword/value quoted and backslash-escaped, sslpassword, URL
// userinfo, `?password=`, `&password=`), whole or broken (a bad port, a
// bad sslmode), and checks Redact and the errors of Get and Ping against
// the secret: none shows it. The password starts and ends with "Qzx",
// which no message has otherwise, so its start or end showing in any form
// (raw, quoted, percent-encoded) is caught too.
func FuzzRedactPostgres(f *testing.F) {
	for _, body := range []string{`a\ b c`, "a b c", `it's`, `x\'y z`, "p@ss:w/rd?#&=", "\x00\x01\t\n", "\u202e\xff", ""} {
		for form := range 6 {
			for broken := range 3 {
				f.Add(body, uint8(form), uint8(broken))
			}
		}
	}
	port := strconv.Itoa(testenv.FreePort(f)) // nothing listens
	f.Fuzz(func(t *testing.T, body string, form, broken uint8) {
		secret := "Qzx" + body + "Qzx"
		dsn := postgresDSN(secret, form%6, broken%3, port)
		for _, m := range pgMessages(t, dsn) {
			if strings.Contains(m, "Qzx") {
				t.Fatalf("DSN %q (password %q): message shows the password: %s", dsn, secret, m)
			}
		}
	})
}

// postgresDSN writes secret into DSN form (0-5), broken by a bad port (1)
// or a bad sslmode (2), or whole (0) for a server at port.
func postgresDSN(secret string, form, broken uint8, port string) string {
	if broken == 1 {
		port = "notaport"
	}
	sslmode := "disable"
	if broken == 2 {
		sslmode = "bogus"
	}
	kv := "host=127.0.0.1 port=" + port + " user=app dbname=db sslmode=" + sslmode + " "
	u := url.URL{Scheme: "postgres", User: url.User("app"), Host: "127.0.0.1:" + port, Path: "/db"}
	switch form {
	case 0:
		return kv + "password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(secret) + "'"
	case 1:
		return kv + "password=" + escapeUnquoted(secret)
	case 2:
		return kv + "sslpassword='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(secret) + "'"
	case 3:
		u.User = url.UserPassword("app", secret)
		u.RawQuery = "sslmode=" + sslmode
	case 4:
		u.RawQuery = "password=" + url.QueryEscape(secret) + "&sslmode=" + sslmode
	default:
		u.RawQuery = "sslmode=" + sslmode + "&password=" + url.QueryEscape(secret)
	}
	return u.String()
}

// escapeUnquoted backslash-escapes a keyword/value value's backslashes,
// quotes and white space.
func escapeUnquoted(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte("\\' \t\n\r\v\f", s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
