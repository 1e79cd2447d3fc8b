package limiter

import (
	"fmt"
	"strconv"
)

// Thresholds: a fixed_window Ask may carry marks (Ask.Thresholds), unit
// counts within its quota; the store tells which marks a charge brings the
// key's count of the period to or past for the first time in the period
// (Result.Crossed, SettleResult.Crossed), however many instances share the
// store. The marks already told are kept with the window's count (the
// third field of its state, see windowCounters), so a refund that takes
// the count back below a mark never tells it twice.

// MaxThresholds is the most marks an Ask may carry.
const MaxThresholds = 8

// checkMarks checks an Ask's marks: at most MaxThresholds, each at least 1,
// rising strictly, on a fixed_window quota.
func checkMarks(marks []int64, code int) error {
	if len(marks) == 0 {
		return nil
	}
	if code != codeFixedWindow {
		return fmt.Errorf("thresholds need a fixed_window quota")
	}
	if len(marks) > MaxThresholds {
		return fmt.Errorf("%d thresholds: at most %d", len(marks), MaxThresholds)
	}
	for i, m := range marks {
		if m < 1 || m > MaxEvents || i > 0 && m <= marks[i-1] {
			return fmt.Errorf("thresholds must rise strictly from 1 to 2^50, got %v", marks)
		}
	}
	return nil
}

// crossed returns the marks (as bits, mark i is 1<<i) that a count of
// used reaches and told does not hold yet.
func crossed(marks []int64, told int64, used int64) int64 {
	var c int64
	for i, m := range marks {
		if bit := int64(1) << i; used >= m && told&bit == 0 {
			c |= bit
		}
	}
	return c
}

// appendMarks appends " t <mark>..." to an ask's burst argument: the script
// reads the marks after the calendar boundaries, if any (see window_arg).
func appendMarks(b []byte, marks []int64) []byte {
	b = append(b, " t"...)
	for _, m := range marks {
		b = append(b, ' ')
		b = strconv.AppendInt(b, m, 10)
	}
	return b
}
