package ratelimit

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// In a flood of refusals, each key's first refusal in an interval is one
// info line with everything; the others are debug lines, summed per zone
// in one info line per interval.
func TestRefusalLogSummarised(t *testing.T) {
	c := newClock()
	h := &Handler{Zones: []*Zone{zone("summed", 1, time.Hour)}, now: c.Now}
	logs := provision(t, h)
	next := new(statusHandler)
	// 3 keys, each allowed once then refused 10 times.
	for k := range 3 {
		for i := range 11 {
			res := do(h, next, get("/", "X-API-Key", fmt.Sprintf("k%d", k)))
			if want := map[bool]int{true: http.StatusOK, false: http.StatusTooManyRequests}[i == 0]; res.status != want {
				t.Fatalf("key %d request %d: status %d, want %d", k, i+1, res.status, want)
			}
		}
	}
	const msg = "rate limit exceeded"
	info := logs.FilterMessage(msg).FilterLevelExact(zapcore.InfoLevel)
	if n := info.Len(); n != 3 {
		t.Errorf("%d info refusal lines for 3 keys, want 3 (one per key)", n)
	}
	for _, e := range info.All() {
		f := e.ContextMap()
		for _, k := range []string{"zone", "outcome", "remaining", "retry_after", "algorithm", "events", "window", "quota"} {
			if _, ok := f[k]; !ok {
				t.Errorf("info refusal line without %s: %v", k, f)
			}
		}
	}
	if n := logs.FilterMessage(msg).FilterLevelExact(zapcore.DebugLevel).Len(); n != 27 {
		t.Errorf("%d debug refusal lines, want 27 (every other refusal)", n)
	}
	if n := logs.FilterMessage("rate limit refusals").Len(); n != 0 {
		t.Errorf("%d summaries within the interval, want none yet", n)
	}

	// The next interval's first refusal writes the summary, and logs its
	// key at info again.
	c.Add(refusalLogEvery)
	do(h, next, get("/", "X-API-Key", "k0"))
	sums := logs.FilterMessage("rate limit refusals").All()
	if len(sums) != 1 {
		t.Fatalf("%d summaries after the interval, want 1", len(sums))
	}
	want := map[string]any{"zone": "summed", "refused": int64(30), "logged": int64(3), "suppressed": int64(27),
		"keys": int64(3), "keys_capped": false}
	got := sums[0].ContextMap()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("summary %s = %v (%T), want %v", k, got[k], got[k], v)
		}
	}
	if sums[0].Level != zapcore.InfoLevel {
		t.Errorf("summary at %v, want info", sums[0].Level)
	}
	if n := info.Len(); n != 3 {
		t.Logf("(the filtered view is a snapshot)")
	}
	if n := logs.FilterMessage(msg).FilterLevelExact(zapcore.InfoLevel).Len(); n != 4 {
		t.Errorf("%d info refusal lines, want 4 (k0 again in the new interval)", n)
	}
}

// The keys remembered per zone and interval are bounded: past the cap,
// refusals of new keys are counted, logged at debug only.
func TestRefusalLogBounded(t *testing.T) {
	var r zoneRefusals
	now := time.Unix(1_800_000_000, 0)
	infos := 0
	for i := range refusalLogKeys + 100 {
		if lvl, _, _ := r.admit(fmt.Sprint("key", i), now); lvl == zapcore.InfoLevel {
			infos++
		}
	}
	if infos != refusalLogKeys {
		t.Errorf("%d keys logged at info, want the cap %d", infos, refusalLogKeys)
	}
	if len(r.seen) != refusalLogKeys {
		t.Errorf("%d keys remembered, want the cap %d", len(r.seen), refusalLogKeys)
	}
	_, sum, ok := r.admit("again", now.Add(refusalLogEvery))
	if !ok || sum.refused != refusalLogKeys+100 || !sum.full || sum.keys != refusalLogKeys {
		t.Errorf("summary %+v, %v; want %d refused, keys capped at %d", sum, ok, refusalLogKeys+100, refusalLogKeys)
	}
}

// A logger that writes nothing at info (Caddy's `log { level WARN }` or
// above) costs a refusal no bookkeeping: nothing is counted or locked,
// and nothing is written.
func TestRefusalLogOffAboveInfo(t *testing.T) {
	h := &Handler{Zones: []*Zone{zone("quiet", 1, time.Hour)}, now: newClock().Now}
	provision(t, h)
	core, logs := observer.New(zapcore.WarnLevel)
	h.logger = zap.New(core)
	next := new(statusHandler)
	for i := range 5 {
		if res := do(h, next, get("/", "X-API-Key", "k")); (res.status == http.StatusOK) != (i == 0) {
			t.Fatalf("request %d: status %d", i+1, res.status)
		}
	}
	r := h.Zones[0].refusals
	r.mu.Lock()
	refused := r.refused
	r.mu.Unlock()
	if refused != 0 || logs.Len() != 0 {
		t.Errorf("refusals counted %d, lines written %d; want none with the logger above info", refused, logs.Len())
	}
}
