package webhook

import "testing"

// TestPace: halved on a throttled round down to 1, one more per round
// without, up to the most.
func TestPace(t *testing.T) {
	p := pace{now: 8, most: 8}
	var got []int
	for _, throttled := range []bool{true, true, true, true, false, false, true, false} {
		p.after(throttled)
		got = append(got, p.now)
	}
	want := []int{4, 2, 1, 1, 2, 3, 1, 2}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pace %v, want %v", got, want)
		}
	}
	p = pace{now: 8, most: 8}
	if p.after(false); p.now != 8 {
		t.Errorf("past the most: %d", p.now)
	}
}
