package webhook

import (
	"net/http"
	"strconv"
	"time"
)

// MaxRetryAfter bounds the wait a receiver can ask for with Retry-After:
// a longer one is cut to it.
const MaxRetryAfter = 24 * time.Hour

// ParseRetryAfter reads a Retry-After header value (RFC 9110 10.2.3):
// delay-seconds (decimal digits) or an HTTP-date, taken relative to now.
// It returns a wait in [0, MaxRetryAfter]: 0 for an empty, malformed,
// negative or past value (which ask for nothing), MaxRetryAfter for
// anything longer.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if isDigits(v) {
		sec, err := strconv.ParseUint(v, 10, 64)
		if err != nil || sec > uint64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter // only digits: too many to parse is too long
		}
		return time.Duration(sec) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	d := t.Sub(now)
	return max(0, min(d, MaxRetryAfter))
}

// isDigits reports a non-empty string of ASCII decimal digits.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
