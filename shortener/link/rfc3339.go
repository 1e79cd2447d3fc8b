package link

import (
	"errors"
	"strings"
	"time"
)

// ParseTime reads an RFC 3339 date-time as the API's document states it
// (JSON Schema's date-time): time.Parse alone also takes a one-digit hour
// ("2026-01-02T3:04:05Z"), which the document refuses, and refuses a
// lower-case t or z, which RFC 3339 allows.
func ParseTime(s string) (time.Time, error) {
	if !rfc3339Shape(s) {
		return time.Time{}, errors.New("not an RFC 3339 date-time")
	}
	if s[10] == 't' || s[len(s)-1] == 'z' {
		s = s[:10] + "T" + strings.ToUpper(s[11:])
	}
	return time.Parse(time.RFC3339, s)
}

// rfc3339Shape reports whether s is laid out as
// YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM), any digit in place of each letter.
func rfc3339Shape(s string) bool {
	const head = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(head)+1 {
		return false
	}
	for i := 0; i < len(head); i++ {
		switch c := s[i]; head[i] {
		case 'd':
			if c < '0' || c > '9' {
				return false
			}
		case 'T':
			if c != 'T' && c != 't' {
				return false
			}
		default:
			if c != head[i] {
				return false
			}
		}
	}
	rest := s[len(head):]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	switch {
	case rest == "Z" || rest == "z":
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		return isDigits(rest[1:3]) && isDigits(rest[4:6])
	}
	return false
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
