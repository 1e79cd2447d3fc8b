package targeting

import (
	"fmt"
	"strings"
)

// A value normaliser returns a list value in its normalised form, or a
// message saying what is wrong with it. Values are compared in any case
// and shown in the case the model names.

// oneOf accepts the names given, in any case, shown lower-case.
func oneOf(names []string) func(string) (string, string) {
	return func(s string) (string, string) {
		for _, n := range names {
			if strings.EqualFold(s, n) {
				return n, ""
			}
		}
		return "", "must be one of " + strings.Join(names, ", ")
	}
}

// browserValue accepts a browser name: 1 to MaxBrowserName of
// [a-z0-9 _-], upper-case letters taken as lower-case.
func browserValue(s string) (string, string) {
	if s == "" || len(s) > MaxBrowserName {
		return "", fmt.Sprintf("a browser name is 1 to %d characters long", MaxBrowserName)
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
			continue
		}
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == ' ' || c == '_' || c == '-') {
			return "", "a browser name holds only a-z 0-9 space _ -"
		}
	}
	return string(b), ""
}

// countryValue accepts an ISO 3166-1 alpha-2 code: two ASCII letters,
// shown upper-case.
func countryValue(s string) (string, string) {
	if len(s) != 2 || !isLetter(s[0]) || !isLetter(s[1]) {
		return "", "must be an ISO 3166-1 alpha-2 country code (two letters)"
	}
	return strings.ToUpper(s), ""
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isAlnum(c byte) bool { return isLetter(c) || '0' <= c && c <= '9' }
