// Package redact hides secrets (passwords, tokens) in the messages both
// modules write about their connections: in error text, however a message
// quotes or escapes them, and in URL queries.
package redact

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Mask is what a secret is replaced with.
const Mask = "xxxxx"

// Forms returns msg with each secret replaced by Mask in every form a
// message may carry it: as written, as Go quotes it (strconv.Quote
// escapes `"`, `\` and control characters), and percent-encoded as a
// query or a path escapes it. Longer secrets go first, so one that holds
// another is hidden whole. Empty secrets are ignored.
func Forms(msg string, secrets ...string) string {
	var forms []string
	for _, s := range secrets {
		if s == "" {
			continue
		}
		quoted := strconv.Quote(s)
		forms = append(forms, s, quoted[1:len(quoted)-1], url.QueryEscape(s), url.PathEscape(s))
	}
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	for _, f := range forms {
		if f != "" {
			msg = strings.ReplaceAll(msg, f, Mask)
		}
	}
	return msg
}

// SensitiveKey reports whether a query parameter or keyword/value key
// names a secret: any key holding "pass", "secret" or "token", or "auth"
// (case-insensitive; password, sslpassword, passwd, auth_token, ...).
func SensitiveKey(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "pass") || strings.Contains(k, "secret") || strings.Contains(k, "token") || k == "auth"
}

// Query returns a raw URL query with the value of each sensitive
// parameter (SensitiveKey, after percent-decoding the key) replaced by
// Mask, the parameters in their order. A parameter whose key does not
// decode is replaced whole.
func Query(raw string) string {
	if raw == "" {
		return raw
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		k, _, hasValue := strings.Cut(p, "=")
		key, err := url.QueryUnescape(k)
		switch {
		case err != nil:
			parts[i] = Mask
		case SensitiveKey(key) && hasValue:
			parts[i] = k + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}

// QuerySecrets returns the values of a raw URL query's sensitive
// parameters, as written and decoded, and the whole of any parameter
// whose key does not decode: the strings Query hides.
func QuerySecrets(raw string) []string {
	var out []string
	for _, p := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(p, "=")
		key, err := url.QueryUnescape(k)
		switch {
		case err != nil:
			out = append(out, p)
		case SensitiveKey(key):
			out = append(out, v)
			if dec, err := url.QueryUnescape(v); err == nil {
				out = append(out, dec)
			}
		}
	}
	return out
}

// Quoted returns msg with the text of every double-quoted fragment (Go
// quoting: `\"` inside does not end it) replaced by Mask: for a parser's
// message that quotes pieces of an input whose secrets cannot be told
// apart (an input that did not parse). An unterminated quote hides the
// rest.
func Quoted(msg string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		switch {
		case !in:
			b.WriteByte(c)
			in = c == '"'
		case c == '\\':
			i++
		case c == '"':
			b.WriteString(Mask + `"`)
			in = false
		}
	}
	if in {
		b.WriteString(Mask)
	}
	return b.String()
}
