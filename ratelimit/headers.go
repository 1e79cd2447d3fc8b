package ratelimit

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
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

// headerValues holds the values of one response's rate limit headers,
// allocated once per response: each value is a string over buf (never
// written again once a string points into it), and each header's value
// slice is one element of vals.
type headerValues struct {
	vals [6]string
	buf  [128]byte
}

// setHeaders writes the rate limit headers of one request: the policy of
// every zone decided for it, and the state of ds[pick], the zone with the
// least left (or, on a refusal, the one refusing longest). On a refusal
// it also writes Retry-After, whatever the header mode, and returns its
// value: the wait with its jitter, which RateLimit's `t` and
// X-RateLimit-Reset then carry too.
func (h *Handler) setHeaders(hdr http.Header, ds []zoneDecision, pick int, refused bool) (retry string) {
	if h.headers == headersNone && !refused {
		return ""
	}
	d := &ds[pick]
	v := new(headerValues)
	b := v.buf[:0]
	set := func(i int, name, val string) {
		v.vals[i] = val
		hdr[name] = v.vals[i : i+1 : i+1]
	}
	// str is b[from:] as a string. Appending never rewrites b[:len(b)],
	// and a b that outgrows buf moves to a new array, so it stays intact.
	str := func(from int) string { return unsafe.String(&b[from], len(b)-from) }

	wait := untilMore(d.res)
	if refused {
		wait = retryAfterSeconds(h.jittered(d.res.RetryAfter))
		start := len(b)
		b = strconv.AppendInt(b, wait, 10)
		retry = str(start)
		set(5, hdrRetryAfter, retry)
	}
	if h.headers == headersNone {
		return retry
	}
	var remaining string
	if h.headers != headersLegacy {
		set(0, hdrPolicy, h.policyOf(ds))
		start := len(b)
		b = append(b, d.zone.quoted...)
		b = append(b, ";r="...)
		from := len(b)
		b = strconv.AppendInt(b, d.res.Remaining, 10)
		to := len(b)
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, wait, 10)
		rl := str(start)
		set(1, hdrRateLimit, rl)
		remaining = rl[from-start : to-start]
	}
	if h.headers != headersIETF {
		if remaining == "" {
			start := len(b)
			b = strconv.AppendInt(b, d.res.Remaining, 10)
			remaining = str(start)
		}
		now := d.res.Now
		if now.IsZero() {
			now = h.now()
		}
		start := len(b)
		b = strconv.AppendInt(b, ceilUnix(now)+wait, 10)
		set(2, hdrLimit, d.limitStr())
		set(3, hdrRemaining, remaining)
		set(4, hdrReset, str(start))
	}
	return retry
}

// policyOf is the RateLimit-Policy value for the zones that decided:
// precomputed when every zone of the handler or just one did (and their
// quotas are their own: no plan, placeholder or brake changed them).
func (h *Handler) policyOf(ds []zoneDecision) string {
	n, last, static := 0, -1, true
	for i := range ds {
		if ds[i].decided() {
			n, last = n+1, i
			static = static && ds[i].static()
		}
	}
	switch {
	case n == len(h.Zones) && static:
		return h.policyAll
	case n == 1:
		return ds[last].policyItem()
	}
	var b strings.Builder
	for i := range ds {
		if !ds[i].decided() {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ds[i].policyItem())
	}
	return b.String()
}

// jittered is the wait of a refusal plus up to the handler's jitter of it,
// uniformly at random, so that refused clients do not all come back at
// once. It is never shorter than wait.
func (h *Handler) jittered(wait time.Duration) time.Duration {
	if h.Jitter <= 0 || wait <= 0 {
		return wait
	}
	return wait + time.Duration(rand.Float64()*h.Jitter*float64(wait))
}

// untilMore is the RateLimit `t` parameter: on a refusal the whole seconds
// until the request could succeed (at least 1, never early); otherwise the
// seconds until the quota is fully available again.
func untilMore(r limiter.Result) int64 {
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

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
