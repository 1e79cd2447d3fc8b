package testenv

import (
	"testing"
	"time"
)

// AwayFromWindowEnd waits for the next window of length w when fewer than
// margin are left of the current one. Windows start at multiples of w
// since the Unix epoch, as fixed windows do (on Redis TIME, the same
// clock on this host), so a test whose requests must share one window's
// count does not straddle two.
func AwayFromWindowEnd(t testing.TB, w, margin time.Duration) {
	t.Helper()
	if left := w - time.Duration(time.Now().UnixNano())%w; left < margin {
		t.Logf("waiting %v for the next %v window", left.Round(time.Millisecond), w)
		time.Sleep(left + 10*time.Millisecond)
	}
}
