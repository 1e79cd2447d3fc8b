package limiter

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Ban makes repeated refusals cost a key a ban: an Ask refused After times
// within its Limit's window sets a ban of Duration, during which every Ask
// of the key is refused outright (its quota untouched, RetryAfter the ban's
// remainder). Each further ban of the key doubles, up to Max. A ban is
// decided in the same call as the Ask (no extra round trip) and kept in a
// companion of the key (see BanKey).
//
// What a key's ban state remembers, and for how long: the refusals counted
// towards the next ban, until one window after the first of them; the
// number of bans set (which doubles the next), until Max after the last ban
// ends. No key's ban state outlives its last refusal by more than
// 2 × Max (or one window).
type Ban struct {
	Duration time.Duration // the first ban; zero: no bans
	After    int64         // refusals within the window that set a ban (0 counts as 1)
	Max      time.Duration // the longest ban (0 counts as Duration)
}

// MaxBan bounds a ban and the longest ban: 10 years, like a window.
const MaxBan = MaxWindow

// maxBanLevel bounds the count of bans a key remembers: past it, the ban
// is Max anyway (2^62 × 1ms is past MaxBan).
const maxBanLevel = 63

// CheckBan checks a Ban against the bounds (a zero Ban is off and valid).
func CheckBan(b Ban) error {
	if b.Duration == 0 && b.After == 0 && b.Max == 0 {
		return nil
	}
	switch {
	case b.Duration < time.Millisecond || b.Duration > MaxBan:
		return fmt.Errorf("ban %s: must be at least 1ms and at most %s (10 years)", b.Duration, MaxBan)
	case b.After < 0 || b.After > MaxEvents:
		return fmt.Errorf("ban after %d: must be at least 1 and at most 2^50", b.After)
	case b.Max != 0 && (b.Max < b.Duration || b.Max > MaxBan):
		return fmt.Errorf("ban_max %s: must be at least the ban (%s) and at most %s (10 years)", b.Max, b.Duration, MaxBan)
	}
	return nil
}

// banParams is a Ban in the units the stores use (zero: no bans).
type banParams struct {
	us    int64 // the first ban (whole milliseconds, in µs)
	after int64
	maxUs int64
	// notify: refusals are counted (for Result.First) even with no ban
	notify bool
}

// banParamsOf converts a checked Ban.
func banParamsOf(b Ban) (banParams, error) {
	if b.Duration == 0 {
		return banParams{}, nil
	}
	if err := CheckBan(b); err != nil {
		return banParams{}, err
	}
	p := banParams{us: b.Duration.Milliseconds() * 1000, after: max(b.After, 1), maxUs: b.Max.Milliseconds() * 1000}
	p.maxUs = max(p.maxUs, p.us)
	return p, nil
}

// on reports whether bans are set at all.
func (b banParams) on() bool { return b.us > 0 }

// counts reports whether refusals are counted in the key's ban state: to
// set bans, or to tell the first refusal of a window (Ask.Notify).
func (b banParams) counts() bool { return b.on() || b.notify }

// scriptCode is the algorithm code as the Redis script reads it: the code
// alone, or followed by the ban's parameters "<code> <ban ms> <after> <max ms>"
// (a ban of 0 ms: refusals only counted).
func (b banParams) scriptCode(code int) any {
	if !b.counts() {
		return code
	}
	k := banCodeKey{code, b}
	if m := banCodes.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	var v any = strings.Join([]string{strconv.Itoa(code), strconv.FormatInt(b.us/1000, 10),
		strconv.FormatInt(b.after, 10), strconv.FormatInt(b.maxUs/1000, 10)}, " ")
	keepBanCode(k, v)
	return v
}

// banCodes holds the script codes of the bans seen, each built and boxed
// once: a zone's ban is the same on every request, and building its code
// per decision cost two allocations (as many as its ban key, which the
// script is given in KEYS, now costs). Copy on write: decisions read it
// without a lock. At most maxBanCodes codes (plans may give many bans);
// others are built per decision.
var (
	banCodes   atomic.Pointer[map[banCodeKey]any]
	banCodesMu sync.Mutex
)

const maxBanCodes = 256

// banCodeKey is what a script code is made of.
type banCodeKey struct {
	code int
	ban  banParams
}

// keepBanCode adds v, the script code of k, to banCodes if there is room.
func keepBanCode(k banCodeKey, v any) {
	banCodesMu.Lock()
	defer banCodesMu.Unlock()
	old := banCodes.Load()
	if old != nil && len(*old) >= maxBanCodes {
		return
	}
	m := make(map[banCodeKey]any, 1+lenOfMap(old))
	if old != nil {
		maps.Copy(m, *old)
	}
	m[k] = v
	banCodes.Store(&m)
}

func lenOfMap(m *map[banCodeKey]any) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// BanKey is the key holding the ban state of the store key key, in the
// same Redis Cluster slot: a key with a hash tag keeps it ("<key>:ban"),
// any other becomes the hash tag ("{<key>}:ban"). Store keys hold a '}'
// only in a hash tag, unless key_prefix has one: such a key also gets
// "<key>:ban", which on a Cluster may lie in another slot (the decision
// then fails like any cross-slot call). The Redis script is given it in
// KEYS, right after the key, and builds no key itself.
func BanKey(key string) string {
	if strings.IndexByte(key, '}') >= 0 {
		return key + ":ban"
	}
	return "{" + key + "}:ban"
}

// banState is one key's ban state, mirrored by the script's "<count>
// <since> <until> <level>".
type banState struct {
	count int64 // refusals counted towards the next ban
	since int64 // µs: when the first of them was
	until int64 // µs: the end of the ban set last (0: none)
	level int64 // bans set so far
}

// left is the ban's remainder at now (µs; <= 0: no ban in force).
func (st banState) left(now int64) int64 { return st.until - now }

// offend counts a refusal at now, under window windowUs. It returns the
// new state, the ban it set (µs; 0: none) and whether the refusal is the
// first of its window (or since the last ban).
func (st banState) offend(now, windowUs int64, b banParams) (banState, int64, bool) {
	if now >= st.since+windowUs {
		st.count, st.since = 0, now
	}
	if now >= st.until+b.maxUs { // as if the state had expired (see expireAt)
		st.level = 0
	}
	st.count++
	first := st.count == 1
	if !b.on() || st.count < b.after {
		return st, 0, first
	}
	st.level = min(st.level+1, maxBanLevel)
	dur := int64(math.Min(float64(b.us)*math.Pow(2, float64(st.level-1)), float64(b.maxUs)))
	st.count, st.since, st.until = 0, now, now+dur
	return st, dur, first
}

// expireAt is when the state may be forgotten (µs): one window after the
// first refusal counted, and, once a ban was set, Max after it ends.
func (st banState) expireAt(windowUs int64, b banParams) int64 {
	at := st.since + windowUs
	if st.level > 0 {
		at = max(at, st.until+b.maxUs)
	}
	return at
}

// bannedDecision is the refusal of an Ask by a ban with left µs to run:
// its quota untouched, nothing left until the ban ends.
func bannedDecision(left int64) decision {
	return decision{retryUs: left, resetUs: left, ban: banInForce}
}

// Ban outcomes of a decision (decision.ban, and the verdict of the
// script's reply: 0 refused, 1 allowed, then these), and the flag the
// script adds to the verdict of a refusal that is the first of its window.
const (
	banNone      = 0
	banInForce   = 2 // refused by a ban in force
	banSet       = 3 // refused, and this refusal set a ban
	verdictFirst = 4 // added: the first refusal of the key's window
	// verdictCrossed: an allowed verdict plus this times the thresholds it
	// crossed (bits; see thresholds.go)
	verdictCrossed = 8
)

// withBan makes a refusal the one that set a ban of dur µs.
func (d decision) withBan(dur int64) decision {
	d.retryUs, d.ban = dur, banSet
	d.resetUs = max(d.resetUs, dur)
	return d
}
