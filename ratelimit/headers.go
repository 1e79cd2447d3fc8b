package ratelimit

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// headerMode selects the rate limit response headers.
type headerMode uint8

const (
	headersBoth   headerMode = iota // IETF and legacy
	headersIETF                     // RateLimit-Policy and RateLimit
	headersLegacy                   // X-RateLimit-Limit, -Remaining, -Reset
	headersNone
)

func parseHeaderMode(s string) (headerMode, error) {
	switch s {
	case "", "both":
		return headersBoth, nil
	case "ietf":
		return headersIETF, nil
	case "legacy":
		return headersLegacy, nil
	case "none":
		return headersNone, nil
	}
	return 0, fmt.Errorf("invalid headers %q: must be ietf, legacy, both or none", s)
}

// policyHeader joins the zones' precomputed RateLimit-Policy items:
// `"<zone>";q=<events>;w=<window seconds>`, comma-separated.
func policyHeader(zones []*Zone) string {
	items := make([]string, len(zones))
	for i, z := range zones {
		items[i] = z.policy
	}
	return strings.Join(items, ", ")
}

// Header names in canonical form, set directly: http.Header.Set would
// canonicalise (and allocate) on every request.
const (
	hdrPolicy     = "Ratelimit-Policy" // RateLimit-Policy
	hdrRateLimit  = "Ratelimit"        // RateLimit
	hdrLimit      = "X-Ratelimit-Limit"
	hdrRemaining  = "X-Ratelimit-Remaining"
	hdrReset      = "X-Ratelimit-Reset"
	hdrRetryAfter = "Retry-After"
)

// setHeaders writes the rate limit headers of one request: the policy of
// every zone decided for it, and the state of ds[pick], the zone with the
// least left (or, on a refusal, the one refusing longest).
func (h *Handler) setHeaders(hdr http.Header, ds []zoneDecision, pick int) {
	if h.headers == headersNone {
		return
	}
	d := &ds[pick]
	wait := untilMore(d.res)
	remaining := strconv.FormatInt(d.res.Remaining, 10)
	vals := make([]string, 5) // one allocation for every header's value slice
	set := func(i int, name, v string) {
		vals[i] = v
		hdr[name] = vals[i : i+1 : i+1]
	}
	if h.headers != headersLegacy {
		set(0, hdrPolicy, h.policyOf(ds))
		set(1, hdrRateLimit, d.zone.quoted+";r="+remaining+";t="+strconv.FormatInt(wait, 10))
	}
	if h.headers != headersIETF {
		now := d.res.Now
		if now.IsZero() {
			now = h.now()
		}
		set(2, hdrLimit, d.zone.limitStr)
		set(3, hdrRemaining, remaining)
		set(4, hdrReset, strconv.FormatInt(ceilUnix(now)+wait, 10))
	}
}

// policyOf is the RateLimit-Policy value for the zones that decided.
func (h *Handler) policyOf(ds []zoneDecision) string {
	n := 0
	for i := range ds {
		if ds[i].decided() {
			n++
		}
	}
	if n == len(h.Zones) {
		return h.policyAll
	}
	var b strings.Builder
	for i := range ds {
		if !ds[i].decided() {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ds[i].zone.policy)
	}
	return b.String()
}

// untilMore is the RateLimit `t` parameter: on a refusal the whole seconds
// until the request could succeed (at least 1, never early); otherwise the
// seconds until the quota is fully available again.
func untilMore(r Result) int64 {
	if !r.Allowed {
		return retryAfterSeconds(r.RetryAfter)
	}
	return ceilSeconds(r.Reset)
}

// retryAfterSeconds is a Retry-After value: whole seconds, rounded up, >= 1.
func retryAfterSeconds(d time.Duration) int64 {
	return max(ceilSeconds(d), 1)
}

// ceilUnix is t in Unix seconds, rounded up.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}
