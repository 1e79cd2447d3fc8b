package ratelimit

import (
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestJitterBounds refuses one key 4,000 times with a wait of 1000s and
// checks the distribution of Retry-After: never below the real wait,
// never above wait × (1 + jitter), uniform in between (mean and each
// quarter within 4 standard deviations), and carried by RateLimit's t.
func TestJitterBounds(t *testing.T) {
	for _, jitter := range []float64{0, 0.5, 1} {
		t.Run(strconv.FormatFloat(jitter, 'f', -1, 64), func(t *testing.T) {
			h := &Handler{Zones: []*Zone{zone("slow", 1, 1000*time.Second)}, Jitter: jitter}
			h.now = newClock().Now // frozen: the real wait stays 1000s
			provision(t, h)
			next := new(statusHandler)
			if res := do(h, next, get("/")); res.status != http.StatusOK {
				t.Fatalf("first request: status %d", res.status)
			}
			const n = 4000
			lo, hi := 1000.0, 1000*(1+jitter)
			var sum float64
			quarters := [4]int{}
			for i := range n {
				res := do(h, next, get("/"))
				if res.status != http.StatusTooManyRequests {
					t.Fatalf("request %d: status %d, want 429", i, res.status)
				}
				v, err := strconv.Atoi(res.header.Get("Retry-After"))
				if err != nil {
					t.Fatal(err)
				}
				if rl := res.header.Get("RateLimit"); rl != `"slow";r=0;t=`+strconv.Itoa(v) {
					t.Fatalf("RateLimit = %q, want t=%d like Retry-After", rl, v)
				}
				if got, _ := res.repl.Get("http.ratelimit.retry_after"); got != strconv.Itoa(v) {
					t.Fatalf("retry_after placeholder = %v, want %d", got, v)
				}
				if float64(v) < lo || float64(v) > math.Ceil(hi) {
					t.Fatalf("Retry-After %d outside [%v, %v]", v, lo, math.Ceil(hi))
				}
				sum += float64(v)
				if jitter > 0 {
					q := int((float64(v) - lo) / (hi - lo) * 4)
					quarters[min(max(q, 0), 3)]++
				}
			}
			mean := sum / n
			// Uniform on [lo, hi] (rounded up: +0.5 on average).
			want := (lo+hi)/2 + 0.5
			sd := (hi - lo) / math.Sqrt(12) / math.Sqrt(n)
			if jitter == 0 {
				want, sd = 1000, 0.25
			}
			if math.Abs(mean-want) > 4*sd+0.5 {
				t.Errorf("mean Retry-After %.1f, want %.1f ± %.1f", mean, want, 4*sd+0.5)
			}
			if jitter > 0 {
				p := 0.25
				qsd := math.Sqrt(n * p * (1 - p))
				for i, c := range quarters {
					if math.Abs(float64(c)-n*p) > 4*qsd {
						t.Errorf("quarter %d of the jitter range got %d of %d refusals, want %.0f ± %.0f", i, c, n, n*p, 4*qsd)
					}
				}
			}
			t.Logf("jitter %v: mean Retry-After %.1f s, quarters %v", jitter, mean, quarters)
		})
	}
}
