package shortener

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// entryRules are a link's per-link rules as the redirect path reads them;
// a link without rules has none (entry.rules nil), and its redirect costs
// what it did before rules existed.
type entryRules struct {
	status    int   // 301, 302, 307 or 308; 0: the handler's status
	validFrom int64 // Unix nanoseconds; 0: none
	maxClicks int64 // 0: no bound
	forward   int8  // forwardDefault, forwardOn or forwardOff
}

// Values of entryRules.forward, as the Redis entry writes them.
const (
	forwardDefault int8 = iota // the handler's forward_query
	forwardOn
	forwardOff
)

// rulesOf returns l's rules for the caches, nil when it has none.
func rulesOf(l link.Link) *entryRules {
	if l.RedirectStatus == 0 && l.ValidFrom.IsZero() && l.MaxClicks == 0 && l.ForwardQuery == nil {
		return nil
	}
	r := &entryRules{status: l.RedirectStatus, maxClicks: l.MaxClicks}
	if !l.ValidFrom.IsZero() {
		r.validFrom = unixNanoBounded(l.ValidFrom)
	}
	switch {
	case l.ForwardQuery == nil:
	case *l.ForwardQuery:
		r.forward = forwardOn
	default:
		r.forward = forwardOff
	}
	return r
}

// unixNanoBounded is t in Unix nanoseconds, the largest int64 past 2262.
func unixNanoBounded(t time.Time) int64 {
	if t.Before(maxExpiry) {
		return t.UnixNano()
	}
	return maxExpiry.UnixNano()
}

// encodeRules is the Redis value of a live link with rules:
//
//	R<expires unix ms, 0 = never>|<status>|<valid_from unix µs, 0 = none>|<max_clicks>|<forward>|<long url>
//
// valid_from is kept to the microsecond, as the stores keep it. Versions before rules existed read an R value as malformed and ask
// the store, which serves the link without its rules.
func encodeRules(expiresMs int64, r *entryRules, long string) string {
	var from int64
	if r.validFrom != 0 {
		from = r.validFrom / int64(time.Microsecond)
	}
	b := make([]byte, 0, len(long)+48)
	b = append(b, 'R')
	b = strconv.AppendInt(b, expiresMs, 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(r.status), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, from, 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, r.maxClicks, 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(r.forward), 10)
	b = append(b, '|')
	return string(append(b, long...))
}

var errMalformedEntry = errors.New("malformed cache entry")

// decodeRules reads the part of an R value after the R: the expiry, the
// rules and the long URL.
func decodeRules(v string) (expires time.Time, r *entryRules, long string, err error) {
	var n [5]int64
	for i := range n {
		field, rest, ok := strings.Cut(v, "|")
		x, perr := strconv.ParseInt(field, 10, 64)
		if !ok || perr != nil || x < 0 {
			return time.Time{}, nil, "", errMalformedEntry
		}
		n[i], v = x, rest
	}
	r = &entryRules{status: int(n[1]), maxClicks: n[3], forward: int8(n[4])}
	if v == "" || (r.status != 0 && !link.ValidRedirectStatus(r.status)) || n[4] > int64(forwardOff) || r.maxClicks > link.MaxMaxClicks {
		return time.Time{}, nil, "", errMalformedEntry
	}
	if n[2] != 0 {
		r.validFrom = unixNanoBounded(time.UnixMicro(n[2]))
	}
	if n[0] != 0 {
		expires = time.UnixMilli(n[0])
	}
	return expires, r, v, nil
}

// notYet reports whether the link is before its valid_from at now (Unix
// nanoseconds): it answers 404 then.
func (r *entryRules) notYet(now int64) bool {
	return r.validFrom != 0 && now < r.validFrom
}
