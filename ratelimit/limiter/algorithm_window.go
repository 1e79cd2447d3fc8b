package limiter

// windowCounters is the state of fixed_window (start, cur, told) and
// sliding_window (start, cur, prev): the start (µs) of the window cur
// counts, and the count of the window before it (sliding_window) or the
// thresholds told in the window (fixed_window, as bits: see
// thresholds.go). Stored in Redis as the string "<code> <start> <cur>
// [<told>]" (fixed_window, code 3) or "<code> <start> <cur> <prev>"
// (sliding_window, code 2; see decide.lua).
type windowCounters struct {
	start, cur, prev int64
}

// decideFixedWindow decides one Ask on a counter per window aligned to
// multiples of Window since the epoch, or per calendar period (see
// params.period). The state expires at the window end.
func decideFixedWindow(st windowCounters, ok bool, now int64, p params) (decision, windowCounters) {
	start, end := p.period(now)
	var count, told int64
	if ok && st.start == start {
		count, told = st.cur, st.prev
	}
	if count+p.need() <= p.events {
		var c int64
		if p.cost > 0 {
			c = crossed(p.marks, told, count+p.cost)
		}
		return decision{
			allowed:   true,
			remaining: p.events - count - p.cost,
			resetUs:   end - now,
			expireAt:  end,
			crossed:   c,
		}, windowCounters{start: start, cur: count + p.cost, prev: told | c}
	}
	d := decision{remaining: p.events - count, resetUs: end - now, retryUs: end - now}
	if p.need() > p.events {
		d.retryUs = p.windowUs // never
	}
	return d, st
}

// slidingCounts returns the current window's start, its count and the
// previous window's count at now, from the stored state.
func slidingCounts(st windowCounters, ok bool, now, windowUs int64) (start, cur, prev int64) {
	start = windowStart(now, windowUs)
	switch {
	case !ok:
	case st.start == start:
		cur, prev = st.cur, st.prev
	case st.start == start-windowUs:
		prev = st.cur
	}
	return start, cur, prev
}

// slidingEstimate is prev × (1 − elapsed/window) + cur.
func slidingEstimate(cur, prev, elapsed, windowUs int64) float64 {
	return float64(prev)*(1-float64(elapsed)/float64(windowUs)) + float64(cur)
}

// slidingAt is the estimate at now from the stored state.
func slidingAt(st windowCounters, ok bool, now, windowUs int64) float64 {
	start, cur, prev := slidingCounts(st, ok, now, windowUs)
	return slidingEstimate(cur, prev, now-start, windowUs)
}

// decideSlidingWindow decides one Ask on the weighted sum of the current
// and previous fixed-window counters. The state expires when both windows
// are over.
func decideSlidingWindow(st windowCounters, ok bool, now int64, p params) (decision, windowCounters) {
	w := p.windowUs
	start, cur, prev := slidingCounts(st, ok, now, w)
	estimate := slidingEstimate(cur, prev, now-start, w)
	events := float64(p.events)
	need := p.need()
	if estimate+float64(need) <= events {
		next := windowCounters{start: start, cur: cur + p.cost, prev: prev}
		d := decision{
			allowed:   true,
			remaining: floorUnits(events - estimate - float64(p.cost)),
			expireAt:  start + 2*w,
		}
		switch {
		case next.cur > 0:
			d.resetUs = start + 2*w - now
		case prev > 0:
			d.resetUs = start + w - now
		}
		return d, next
	}
	d := decision{remaining: floorUnits(events - estimate), retryUs: w}
	switch {
	case cur > 0:
		d.resetUs = start + 2*w - now
	case prev > 0:
		d.resetUs = start + w - now
	}
	if need > p.events {
		return d, st // never
	}
	// The first instant at which estimate + need <= events: still in this
	// window as prev's weight decays, else in the next one as cur's does.
	avail := float64(p.events - need)
	at := int64(-1)
	if prev > 0 && float64(cur) <= avail {
		e := ceilUs(float64(w) * (1 - (avail-float64(cur))/float64(prev)))
		if e < w {
			at = start + e
		}
	}
	if at < 0 {
		if cur == 0 {
			at = start + w
		} else {
			at = start + w + ceilUs(float64(w)*(1-avail/float64(cur)))
		}
	}
	for i := 0; i < maxRetrySteps && slidingAt(st, ok, at, w)+float64(need) > events; i++ {
		at++
	}
	for i := 0; i < maxRetrySteps && slidingAt(st, ok, at-1, w)+float64(need) <= events; i++ {
		at--
	}
	d.retryUs = max(at-now, 1)
	return d, st
}
