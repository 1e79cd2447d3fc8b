package link

import "time"

// The stores keep times to the microsecond, the zero time as 0.

// ToMicros is t in Unix microseconds, 0 for the zero time.
func ToMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// FromMicros is the time of Unix microseconds us, the zero time for 0.
func FromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}
