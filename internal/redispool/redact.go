package redispool

import (
	"errors"
	"net/url"
	"strings"

	"github.com/edgekit/caddy-edgekit/internal/redact"
)

// Redact returns a Redis URL fit for messages: its password, a user name
// given without a password (`redis://secret@host`, which many clients
// read as the password), the value of each query parameter naming a
// secret (`?password=`), and any fragment replaced by "xxxxx"; an opaque
// URL (`redis:secret@host`) shows its scheme only.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	if u.Opaque != "" {
		return u.Scheme + ":" + redact.Mask
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redact.Mask)
		} else {
			u.User = url.User(redact.Mask)
		}
	}
	u.RawQuery = redact.Query(u.RawQuery)
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = redact.Mask, ""
	}
	return u.String()
}

// urlSecrets returns what Redact hides in raw, as written and decoded.
func urlSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	out := []string{u.Opaque, u.Fragment, u.RawFragment}
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		} else {
			out = append(out, u.User.Username())
		}
		out = append(out, u.User.String())
	}
	return append(out, redact.QuerySecrets(u.RawQuery)...)
}

// redactErr renders err with the raw URL shown as Redact shows it and
// every secret in it hidden, in every form a message may quote them.
func redactErr(err error, raw string) string {
	msg := err.Error()
	if raw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, raw, Redact(raw))
	return redact.Forms(msg, urlSecrets(raw)...)
}

// parseFailure says why raw is not a URL without quoting any of it: the
// reason is read off raw with its userinfo (everything between "://" and
// the last "@") cut out, so nothing of a password can show.
func parseFailure(raw string) string {
	safe := raw
	if i := strings.Index(raw, "://"); i >= 0 {
		if at := strings.LastIndexByte(raw, '@'); at > i {
			safe = raw[:i+3] + redact.Mask + raw[at:]
		}
	}
	_, err := url.Parse(safe)
	var ue *url.Error
	switch {
	case err == nil:
		return "invalid user name or password (not shown)"
	case errors.As(err, &ue):
		return ue.Err.Error() + " (the url is not shown: it may hold a password)"
	default:
		return "unparsable (the url is not shown: it may hold a password)"
	}
}
