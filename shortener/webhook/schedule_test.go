package webhook

import (
	"testing"
	"time"
)

func fixed(r float64) func() float64 { return func() float64 { return r } }

func TestScheduleSpansADay(t *testing.T) {
	var shortest, longest time.Duration
	for _, d := range Schedule() {
		shortest += jitter(d, 0)
		longest += jitter(d, 0.999999)
	}
	if shortest < 24*time.Hour {
		t.Errorf("with the jitter at its least the schedule spans %v, want at least 24h", shortest)
	}
	t.Logf("the last attempt comes %v to %v after the first", shortest.Round(time.Second), longest.Round(time.Second))
}

func TestNext(t *testing.T) {
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		attempts   int
		retryAfter time.Duration
		r          float64
		want       time.Duration
		ok         bool
	}{
		{"first attempt now", 0, 0, 0.9, 0, true},
		{"negative is none", -3, 0, 0.9, 0, true},
		{"second after 5s", 1, 0, 0.5, 5 * time.Second, true},
		{"jitter down 20%", 2, 0, 0, 4 * time.Minute, true},
		{"jitter up to 20%", 3, 0, 0.75, 33 * time.Minute, true},
		{"out-of-range random is no jitter", 4, 0, 7, 2 * time.Hour, true},
		{"last attempt", MaxAttempts - 1, 0, 0.5, 14 * time.Hour, true},
		{"Retry-After longer wins", 1, time.Minute, 0.5, time.Minute, true},
		{"Retry-After shorter loses", 3, time.Minute, 0.5, 30 * time.Minute, true},
		{"Retry-After capped", 1, 100 * time.Hour, 0.5, MaxRetryAfter, true},
		{"after the last attempt", MaxAttempts, 0, 0.5, 0, false},
		{"Retry-After does not add attempts", MaxAttempts, time.Hour, 0.5, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, ok := Next(tc.attempts, now, tc.retryAfter, fixed(tc.r))
			if ok != tc.ok || ok && at.Sub(now) != tc.want {
				t.Errorf("Next(%d) = %v after now, %v; want %v, %v", tc.attempts, at.Sub(now), ok, tc.want, tc.ok)
			}
		})
	}
}

func TestNextJitterWithinBounds(t *testing.T) {
	now := time.Now()
	for attempts := 1; attempts < MaxAttempts; attempts++ {
		base := Schedule()[attempts]
		for range 200 {
			at, ok := Next(attempts, now, 0, nil)
			d := at.Sub(now)
			if !ok || d < base*8/10 || d > base*12/10 {
				t.Fatalf("Next(%d) = %v, %v; want within 20%% of %v", attempts, d, ok, base)
			}
		}
	}
}
