package targeting

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// neverAppSchemes are schemes that run or read content in the browser
// instead of opening an app: refused as app_url even when listed.
var neverAppSchemes = []string{"javascript", "data", "vbscript", "file", "blob", "about"}

// checkURL judges a destination (url, a variant's url): printable ASCII
// within MaxURL bytes, accepted by the caller's policy.
func (c *compiler) checkURL(path, raw string) error {
	if msg := urlChars(raw); msg != "" {
		return fieldErr(path, "%s", msg)
	}
	check := c.opts.CheckURL
	if check == nil {
		check = defaultCheckURL
	}
	if err := check(raw); err != nil {
		return fieldErr(path, "%s", err.Error())
	}
	return nil
}

// checkAppURL judges an app_url: printable ASCII within MaxURL bytes, a
// scheme of Options.AppSchemes (never one of neverAppSchemes); an http or
// https one (a universal link) also passes the caller's policy.
func (c *compiler) checkAppURL(path, raw string) error {
	if msg := urlChars(raw); msg != "" {
		return fieldErr(path, "%s", msg)
	}
	scheme, ok := urlScheme(raw)
	if !ok {
		return fieldErr(path, "must start with a scheme and hold more than it (myapp://...)")
	}
	for _, s := range neverAppSchemes {
		if strings.EqualFold(scheme, s) {
			return fieldErr(path, "the scheme %q is never allowed", scheme)
		}
	}
	allowed := false
	for _, s := range c.opts.AppSchemes {
		allowed = allowed || strings.EqualFold(scheme, s)
	}
	if !allowed {
		return fieldErr(path, "the scheme %q is not one of the app schemes allowed", scheme)
	}
	if strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https") {
		return c.checkURL(path, raw)
	}
	return nil
}

// urlChars says what is wrong with the bytes of a URL, "" when nothing
// is: a URL goes into a Location header as it is, so it must be
// printable ASCII (host in punycode, the rest percent-encoded).
func urlChars(raw string) string {
	if raw == "" {
		return "required"
	}
	if len(raw) > MaxURL {
		return fmt.Sprintf("%d bytes long, at most %d are allowed", len(raw), MaxURL)
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c >= 0x7f {
			return "must be printable ASCII, no spaces (write the host in punycode and percent-encode the rest)"
		}
	}
	return ""
}

// urlScheme returns raw's scheme (RFC 3986: a letter, then letters,
// digits, '+', '-', '.') when something follows its ':'.
func urlScheme(raw string) (string, bool) {
	i := strings.IndexByte(raw, ':')
	if i < 1 || i == len(raw)-1 {
		return "", false
	}
	for j := 0; j < i; j++ {
		c := raw[j]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		other := '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
		if !letter && (j == 0 || !other) {
			return "", false
		}
	}
	return raw[:i], true
}

// defaultCheckURL is the policy without Options.CheckURL: an absolute
// http or https URL with a host.
func defaultCheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a valid URL")
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return errors.New("must be an absolute http or https URL")
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	return nil
}
