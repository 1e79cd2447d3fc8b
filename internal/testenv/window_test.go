package testenv

import (
	"testing"
	"time"
)

// TestAwayFromWindowEnd: after it returns, margin is left of the window
// (less a scheduling delay of up to 60ms), whatever the start.
func TestAwayFromWindowEnd(t *testing.T) {
	const w, margin = 200 * time.Millisecond, 120 * time.Millisecond
	for range 10 {
		AwayFromWindowEnd(t, w, margin)
		if left := w - time.Duration(time.Now().UnixNano())%w; left < margin-60*time.Millisecond {
			t.Fatalf("%v left of the window, want at least %v", left, margin)
		}
		time.Sleep(37 * time.Millisecond)
	}
}
