package webhook

import (
	"math/rand/v2"
	"time"
)

// schedule is the delay before each attempt of a message, the first
// immediate: the first eight steps of the example schedule of the
// Standard Webhooks specification (Svix's schedule is the same but for a
// last step of 10 h instead of 14 h):
//
//	attempt  delay   since the event
//	1        0       0:00:00
//	2        5 s     0:00:05
//	3        5 min   0:05:05
//	4        30 min  0:35:05
//	5        2 h     2:35:05
//	6        5 h     7:35:05
//	7        10 h    17:35:05
//	8        14 h    31:35:05
//
// Every delay but the first is jittered by up to ±Jitter, so receivers
// that fail together are not retried together. The last attempt comes
// 31 h 35 min after the first, at least 25 h 16 min with the jitter: the
// schedule spans 24 h even at its shortest, which a 10 h last step would
// not (27 h 35 min less 20% is 22 h). After the eighth failure the message
// is kept as failed. A Retry-After longer than the delay replaces it.
var schedule = [...]time.Duration{
	0,
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	14 * time.Hour,
}

// MaxAttempts is how many attempts a message gets.
const MaxAttempts = len(schedule)

// Schedule returns the delay before each attempt, before jitter, for the
// documentation and the dashboard: 0, 5s, 5m, 30m, 2h, 5h, 10h, 14h. The
// last attempt comes 31h35m05s after the first (25h16m04s to 37h54m06s
// with the jitter), so a message is tried for more than a day; a
// receiver's Retry-After can lengthen a delay, never add an attempt.
func Schedule() []time.Duration { return append([]time.Duration(nil), schedule[:]...) }

// Jitter is the largest fraction by which a delay is moved either way.
const Jitter = 0.2

// Next says when to make the next attempt of a message of which attempts
// attempts have been made (0: none yet, which is now), the last of them
// ending at now; ok is false once MaxAttempts have been made: the message
// has failed. retryAfter is what the receiver asked for with Retry-After
// (ParseRetryAfter; 0 if nothing): it replaces the scheduled delay when
// longer. rnd returns a number in [0, 1) for the jitter; nil means
// math/rand/v2's Float64 (safe for concurrent use).
func Next(attempts int, now time.Time, retryAfter time.Duration, rnd func() float64) (at time.Time, ok bool) {
	if attempts >= MaxAttempts {
		return time.Time{}, false
	}
	attempts = max(attempts, 0)
	if rnd == nil {
		rnd = rand.Float64
	}
	d := jitter(schedule[attempts], rnd())
	if r := min(retryAfter, MaxRetryAfter); r > d {
		d = r
	}
	return now.Add(d), true
}

// jitter moves d by (2r-1)·Jitter of itself: r = 0.5 keeps it.
func jitter(d time.Duration, r float64) time.Duration {
	if r < 0 || r >= 1 {
		r = 0.5
	}
	return d + time.Duration(float64(d)*Jitter*(2*r-1))
}
