package limiter

// virtualQueue is leaky_bucket state: tat, the theoretical arrival time
// (µs) at which the queue is empty again (GCRA). Requests leave one every
// interval = Window/Events; a request is scheduled at max(now, tat) and
// takes cost intervals. Stored in Redis as the string "5 <tat>" (see
// decide.lua).
type virtualQueue struct {
	tat float64
}

// decideLeakyBucket decides one Ask: it passes when its last unit waits at
// most Burst intervals (fewer than Burst requests ahead of it; Burst 0:
// only with no wait, so Burst+1 unit requests pass at once), and its Delay
// is the wait until its turn. It returns the state to store when allowed.
func decideLeakyBucket(st virtualQueue, ok bool, now int64, p params) (decision, virtualQueue) {
	interval := float64(p.windowUs) / float64(p.events)
	limit := float64(p.burst) * interval
	slack := limit - float64(p.need()-1)*interval // how far ahead tat may be
	fnow := float64(now)
	tat := fnow
	if ok && st.tat > tat {
		tat = st.tat
	}
	wait := tat - fnow
	if wait <= slack {
		after := tat + float64(p.cost)*interval
		d := decision{
			allowed:   true,
			remaining: floorUnits((limit-(after-fnow))/interval) + 1,
			resetUs:   ceilUs(after - fnow),
			expireAt:  ceilUs(after) + secondUs,
		}
		if p.cost > 0 {
			d.delayUs = ceilUs(wait)
		}
		return d, virtualQueue{tat: after}
	}
	d := decision{
		remaining: floorUnits((limit-wait)/interval) + 1,
		resetUs:   ceilUs(wait),
		retryUs:   p.windowUs, // more than the queue holds: never
	}
	if slack >= 0 {
		// The first instant at which the stored tat is at most slack ahead.
		at := ceilUs(st.tat - slack)
		for i := 0; i < maxRetrySteps && st.tat-float64(at) > slack; i++ {
			at++
		}
		for i := 0; i < maxRetrySteps && st.tat-float64(at-1) <= slack; i++ {
			at--
		}
		d.retryUs = max(at-now, 1)
	}
	return d, st
}
