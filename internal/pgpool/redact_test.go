package pgpool

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// pgMessages returns every message a DSN can reach: Redact, and the
// errors of Get (parse) and Ping (connect) when they fail.
func pgMessages(t *testing.T, dsn string) []string {
	t.Helper()
	msgs := []string{Redact(dsn)}
	p, err := Get(dsn, Settings{ConnectTimeout: time.Second})
	if err != nil {
		return append(msgs, err.Error())
	}
	defer p.Release()
	if err := Ping(context.Background(), p, dsn, 2*time.Second); err != nil {
		msgs = append(msgs, err.Error())
	}
	return msgs
}

// A keyword/value password with escaped spaces or an escaped quote, quoted
// or not, and a password in the URL's query (`?password=`, `&password=`)
// never show in Redact nor in the errors of a DSN that does not parse or
// a server that does not answer. Every piece of each password holds
// "qzx", which no message has otherwise.
func TestRedactPostgresPasswordForms(t *testing.T) {
	port := strconv.Itoa(testenv.FreePort(t)) // nothing listens
	for _, tc := range []struct{ name, dsn string }{
		{"escaped spaces", `host=127.0.0.1 port=` + port + ` user=app password=qzx1\ qzx2\ qzx3 dbname=db`},
		{"quoted with spaces", `host=127.0.0.1 port=` + port + ` user=app password='qzx1 qzx2 qzx3' dbname=db`},
		{"quoted with escapes", `host=127.0.0.1 port=` + port + ` user=app password='qzx1\ qzx2 \'qzx3' dbname=db`},
		{"escaped spaces, bad port", `host=127.0.0.1 port=notaport user=app password=qzx1\ qzx2\ qzx3 dbname=db`},
		{"quoted with escapes, bad port", `host=127.0.0.1 port=notaport user=app password='qzx1\ qzx2 \'qzx3' dbname=db`},
		{"quoted, escaped quote then space, bad port", `host=127.0.0.1 port=notaport password='qzx1 \'qzx2 qzx3' dbname=db`},
		{"quoted, unknown sslmode", `host=127.0.0.1 password='qzx1 qzx2' sslmode=bogus`},
		{"sslpassword", `host=127.0.0.1 port=` + port + ` sslpassword='qzx1 qzx2' dbname=db`},
		{"query", "postgres://app@127.0.0.1:" + port + "/db?password=qzx1%20qzx2"},
		{"query after another", "postgres://app@127.0.0.1:" + port + "/db?connect_timeout=1&password=qzx1+qzx2"},
		{"query, bad sslmode", "postgres://app@127.0.0.1:" + port + "/db?sslmode=bogus&password=qzx1"},
		{"query, bad port", "postgres://app@127.0.0.1:notaport/db?password=qzx1"},
		{"userinfo, bad port", "postgres://app:qzx1%20qzx2@127.0.0.1:notaport/db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range pgMessages(t, tc.dsn) {
				if strings.Contains(strings.ToLower(m), "qzx") {
					t.Errorf("DSN %s: message shows the password: %s", tc.dsn, m)
				}
			}
		})
	}
}
