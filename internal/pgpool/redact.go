package pgpool

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgekit/caddy-edgekit/internal/redact"
)

// Redact names a URL or keyword/value DSN for messages without its
// password: user@host:port/database as parsed, or "(unparsable dsn)".
func Redact(dsn string) string {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return "(unparsable dsn)"
	}
	c := cfg.ConnConfig
	return fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// redactErr renders err without any secret of dsn. pgx's parse errors
// quote the DSN through a best-effort redaction that misses keyword/value
// passwords with escaped spaces or quotes (`password='a\ b c'`), so that
// quote is cut: what is left says what failed, with any quoted fragment of
// the unparsed input hidden. Then every secret of dsn (dsnSecrets) is
// hidden in every form.
func redactErr(err error, dsn string) string {
	msg := err.Error()
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		head := pgconn.NewParseConfigError(pe.ConnString, "", nil).Error() // "cannot parse `<dsn as pgx redacts it>`: "
		if i := strings.Index(msg, head); i >= 0 {
			what, inner, _ := strings.Cut(msg[i+len(head):], " (")
			msg = msg[:i] + "cannot parse the dsn (not shown: it may hold a password): " + what
			if inner != "" {
				msg += " (" + redact.Quoted(inner)
			}
		}
	}
	msg = strings.ReplaceAll(msg, dsn, Redact(dsn))
	return redact.Forms(msg, dsnSecrets(dsn)...)
}

// dsnSecrets returns the secrets of a URL or keyword/value DSN, as
// written and unescaped: the URL's password and sensitive query values,
// or the values of sensitive keywords (password, sslpassword, ...). It
// reads what it can of a DSN that does not parse.
func dsnSecrets(dsn string) []string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return urlSecrets(dsn)
	}
	return keywordSecrets(dsn)
}

// urlSecrets returns a URL DSN's password and sensitive query values. The
// userinfo is everything between "://" and the last "@" before the path,
// as pgx reads it, whether or not the URL parses.
func urlSecrets(dsn string) []string {
	rest := dsn[strings.Index(dsn, "://")+3:]
	var out []string
	authority, query := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		query, _, _ = strings.Cut(rest[i+1:], "#")
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if _, pw, ok := strings.Cut(authority[:at], ":"); ok {
			out = append(out, pw)
			if dec, err := url.PathUnescape(pw); err == nil {
				out = append(out, dec)
			}
		}
	}
	return append(out, redact.QuerySecrets(query)...)
}

// keywordSecrets returns the values of a keyword/value DSN's sensitive
// keywords (redact.SensitiveKey), read as libpq reads them: a value runs
// to the next unescaped space, or is quoted with `\'` and `\\` escapes
// inside; an unterminated quote runs to the end.
func keywordSecrets(dsn string) []string {
	const space = " \t\n\r\v\f"
	var out []string
	s := dsn
	for {
		s = strings.TrimLeft(s, space)
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return out
		}
		key := strings.TrimRight(s[:eq], space)
		if i := strings.LastIndexAny(key, space); i >= 0 {
			key = key[i+1:]
		}
		s = strings.TrimLeft(s[eq+1:], space)
		var raw string
		raw, s = keywordValue(s)
		if redact.SensitiveKey(key) {
			out = append(out, raw, unescapeKeywordValue(raw))
		}
	}
}

// keywordValue splits s after the value at its start: the value as
// written (without its quotes) and the rest.
func keywordValue(s string) (raw, rest string) {
	quoted := strings.HasPrefix(s, "'")
	if quoted {
		s = s[1:]
	}
	end := 0
	for ; end < len(s); end++ {
		c := s[end]
		if c == '\\' {
			end++
			continue
		}
		if quoted && c == '\'' || !quoted && strings.IndexByte(" \t\n\r\v\f", c) >= 0 {
			break
		}
	}
	end = min(end, len(s))
	raw, rest = s[:end], s[end:]
	if quoted && rest != "" {
		rest = rest[1:]
	}
	return raw, rest
}

// unescapeKeywordValue drops the backslash of each escape.
func unescapeKeywordValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
