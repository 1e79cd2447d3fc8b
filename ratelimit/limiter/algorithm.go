package limiter

import (
	"fmt"
	"math"
	"time"
)

// The arithmetic of the algorithms, shared by the memory store and
// mirrored line by line in scripts/decide.lua, so that both stores decide a
// given trace identically. Time is an integer count of microseconds since
// the Unix epoch (what Redis TIME gives); fractional state (tokens, the
// leaky bucket's theoretical arrival time) is float64, like Lua 5.1 numbers,
// and every float expression is written in the same order in both places.

// Algorithm codes: how the Redis script names an algorithm in ARGV.
const (
	codeTokenBucket   = 1
	codeSlidingWindow = 2
	codeFixedWindow   = 3
	codeSlidingLog    = 4
	codeLeakyBucket   = 5
	codeConcurrency   = 6
)

// maxRetrySteps bounds the loops that nudge a computed retry time forward
// by one microsecond until the decision formula itself agrees (float
// rounding); the script uses the same bound.
const maxRetrySteps = 16

// secondUs is one second in microseconds: the slack added to TTLs of state
// that expires by refilling (token and leaky bucket).
const secondUs = 1_000_000

// params is one Ask in the units the algorithms use.
type params struct {
	code     int
	events   int64
	burst    int64
	windowUs int64 // whole milliseconds, in microseconds (concurrency: the lease TTL)
	cost     int64
	ban      banParams
	lease    string // concurrency: the lease id
	// calendar fixed_window: cal holds the boundaries around the clock of
	// the caller (see calendarBounds; set by withCalendar).
	calendar Calendar
	cal      [4]int64
	// fixed_window: the marks whose first crossing in a period is told
	// (Ask.Thresholds)
	marks []int64
	usage Usage // fixed_window: the usage to record (Ask.Usage)
}

// calendarOn reports whether p is a calendar fixed_window.
func (p params) calendarOn() bool { return p.calendar.On() }

// withCalendar sets the boundaries of every calendar ask of ps around
// now (µs): the memory store's clock, or this process's for Redis.
func withCalendar(ps []params, now int64) {
	for i := range ps {
		if ps[i].calendarOn() {
			ps[i].cal = calendarBounds(ps[i].calendar, now)
		}
	}
}

// period returns the fixed window containing now: the calendar period
// among p.cal, else the multiple of the window since the epoch.
func (p params) period(now int64) (start, end int64) {
	if p.calendarOn() {
		return pickPeriod(p.cal, now)
	}
	start = windowStart(now, p.windowUs)
	return start, start + p.windowUs
}

// need is what must be left for the Ask to pass: its cost, or one unit for
// a check (cost 0).
func (p params) need() int64 { return max(p.cost, 1) }

// paramsOf validates an Ask and converts it. Window is truncated to whole
// milliseconds, the resolution the Redis script receives. An Ask out of
// bounds (see checkParams) is an ErrInvalidAsk.
func paramsOf(a Ask) (params, error) {
	p := params{
		events:   a.Limit.Events,
		burst:    a.Limit.Burst,
		windowUs: int64(a.Limit.Window/time.Millisecond) * 1000,
		cost:     a.Cost,
		lease:    a.Lease,
	}
	var ok bool
	if p.code, ok = algorithmCode(a.Limit.Algorithm); !ok {
		return p, fmt.Errorf("%w: unknown algorithm %q", ErrInvalidAsk, a.Limit.Algorithm)
	}
	if a.Limit.Calendar.On() {
		if p.code != codeFixedWindow {
			return p, fmt.Errorf("%w: a calendar window needs fixed_window, not %q", ErrInvalidAsk, a.Limit.Algorithm)
		}
		if a.Limit.Calendar.Unit > CalendarMonth {
			return p, fmt.Errorf("%w: unknown calendar unit %d", ErrInvalidAsk, a.Limit.Calendar.Unit)
		}
		p.calendar = a.Limit.Calendar // cal: set by the store (withCalendar)
	}
	if err := checkParams(p); err != nil {
		return p, fmt.Errorf("%w: %w", ErrInvalidAsk, err)
	}
	if err := checkMarks(a.Thresholds, p.code); err != nil {
		return p, fmt.Errorf("%w: %w", ErrInvalidAsk, err)
	}
	p.marks = a.Thresholds
	if err := checkUsage(a.Usage, p.code); err != nil {
		return p, fmt.Errorf("%w: %w", ErrInvalidAsk, err)
	}
	p.usage = a.Usage
	var err error
	if p.ban, err = banParamsOf(a.Ban); err != nil {
		return p, fmt.Errorf("%w: %w", ErrInvalidAsk, err)
	}
	// A concurrency zone has no window to tell a first refusal in.
	p.ban.notify = a.Notify && p.code != codeConcurrency
	return p, nil
}

// decision is one algorithm's verdict on one Ask, in microseconds.
type decision struct {
	allowed   bool
	remaining int64
	retryUs   int64 // refused: wait until the same Ask would pass
	resetUs   int64 // until the quota is fully available again
	delayUs   int64 // leaky_bucket: the allowed request's wait in the queue
	expireAt  int64 // allowed: when the written state may be forgotten
	ban       int8  // refused: banNone, banInForce or banSet
	first     bool  // refused: the first refusal of the key's window
	crossed   int64 // allowed and charged: the marks first reached (see thresholds.go)
}

// result converts a decision taken at now (µs) into a Result.
func (d decision) result(now int64) Result {
	return Result{
		Allowed:    d.allowed,
		Remaining:  max(d.remaining, 0),
		Left:       d.remaining,
		RetryAfter: time.Duration(d.retryUs) * time.Microsecond,
		Reset:      time.Duration(max(d.resetUs, 0)) * time.Microsecond,
		Delay:      time.Duration(d.delayUs) * time.Microsecond,
		Now:        time.UnixMicro(now),
		Banned:     d.ban != banNone,
		BanSet:     d.ban == banSet,
		First:      d.first,
	}
}

// ceilUs rounds a duration or instant in microseconds up.
func ceilUs(x float64) int64 { return int64(math.Ceil(x)) }

// floorUnits rounds a number of units down.
func floorUnits(x float64) int64 { return int64(math.Floor(x)) }

// windowStart is the start of the window containing now: windows are
// aligned to multiples of the window length since the Unix epoch.
func windowStart(now, windowUs int64) int64 { return now - now%windowUs }
