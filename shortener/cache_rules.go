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
	v, ok := cutInts(v, n[:])
	if !ok || v == "" {
		return time.Time{}, nil, "", errMalformedEntry
	}
	if r, ok = rulesFrom(n); !ok {
		return time.Time{}, nil, "", errMalformedEntry
	}
	if n[0] != 0 {
		expires = time.UnixMilli(n[0])
	}
	return expires, r, v, nil
}

// cutInts reads len(n) non-negative decimal fields, each followed by '|',
// from the start of v, and returns the rest.
func cutInts(v string, n []int64) (string, bool) {
	for i := range n {
		field, rest, ok := strings.Cut(v, "|")
		x, err := strconv.ParseInt(field, 10, 64)
		if !ok || err != nil || x < 0 {
			return "", false
		}
		n[i], v = x, rest
	}
	return v, true
}

// rulesFrom judges the fields expires, status, valid_from (µs),
// max_clicks and forward of an R or T value.
func rulesFrom(n [5]int64) (*entryRules, bool) {
	r := &entryRules{status: int(n[1]), maxClicks: n[3], forward: int8(n[4])}
	if n[1] > 999 || (r.status != 0 && !link.ValidRedirectStatus(r.status)) || n[4] > int64(forwardOff) || r.maxClicks > link.MaxMaxClicks {
		return nil, false
	}
	if n[2] != 0 {
		r.validFrom = unixNanoBounded(time.UnixMicro(n[2]))
	}
	return r, true
}

// notYet reports whether the link is before its valid_from at now (Unix
// nanoseconds): it answers 404 then.
func (r *entryRules) notYet(now int64) bool {
	return r.validFrom != 0 && now < r.validFrom
}

// targetedLink is what a T value holds: a link with targeting or a
// fallback URL.
type targetedLink struct {
	gone      bool // revoked, expired or used up: only fallback is kept
	expiresMs int64
	rules     entryRules // the zero value: none
	fallback  string     // "" none
	targeting string     // the normalised rule set JSON; "" none
	long      string     // "" when gone
}

// encodeTargeted is the Redis value of a link with targeting or a
// fallback URL:
//
//	T<L|G><expires ms>|<status>|<valid_from µs>|<max_clicks>|<forward>|<fallback bytes>|<targeting bytes>|<fallback><targeting><long url>
//
// L is a live link, G one gone (revoked, expired or used up) that keeps
// only its fallback URL. The rule fields are an R value's (0: none); the
// fallback URL and the targeting JSON (link.Link's Targeting) are given
// by length, as either may hold '|', and the long URL is the rest. Older
// versions read a T value as malformed and ask the store, which serves the
// link without its targeting or fallback, as they did for R values.
func encodeTargeted(t targetedLink) string {
	b := make([]byte, 0, len(t.fallback)+len(t.targeting)+len(t.long)+64)
	b = append(b, 'T', 'L')
	if t.gone {
		b[1] = 'G'
	}
	from := t.rules.validFrom / int64(time.Microsecond)
	for _, n := range [...]int64{t.expiresMs, int64(t.rules.status), from, t.rules.maxClicks, int64(t.rules.forward), int64(len(t.fallback)), int64(len(t.targeting))} {
		b = strconv.AppendInt(b, n, 10)
		b = append(b, '|')
	}
	b = append(b, t.fallback...)
	b = append(b, t.targeting...)
	return string(append(b, t.long...))
}

// maxTargetedPart bounds the fallback and targeting lengths a T value
// may claim (the stores hold at most targeting.MaxJSON and MaxLongURL).
const maxTargetedPart = 1 << 20

// decodeTargeted reads a T value (with its T). A live link has a long
// URL; a gone one has only a fallback URL.
func decodeTargeted(v string) (targetedLink, error) {
	var t targetedLink
	if len(v) < 2 || v[0] != 'T' || (v[1] != 'L' && v[1] != 'G') {
		return t, errMalformedEntry
	}
	t.gone = v[1] == 'G'
	var n [7]int64
	rest, ok := cutInts(v[2:], n[:])
	if !ok || n[5] > maxTargetedPart || n[6] > maxTargetedPart || n[5]+n[6] > int64(len(rest)) {
		return t, errMalformedEntry
	}
	r, ok := rulesFrom([5]int64(n[:5]))
	if !ok {
		return t, errMalformedEntry
	}
	t.expiresMs, t.rules = n[0], *r
	t.fallback, rest = rest[:n[5]], rest[n[5]:]
	t.targeting, t.long = rest[:n[6]], rest[n[6]:]
	if t.gone != (t.long == "") || (t.gone && (t.targeting != "" || t.rules != entryRules{} || t.expiresMs != 0)) {
		return targetedLink{}, errMalformedEntry
	}
	return t, nil
}
