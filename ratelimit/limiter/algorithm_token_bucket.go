package limiter

// tokenBucket is token_bucket state: the tokens left at time ts (µs).
// Stored in Redis as the string "1 <tokens> <ts>" (see decide.lua).
type tokenBucket struct {
	tokens float64
	ts     int64
}

// tokenLevel is the bucket's content at now: refilled continuously at rate
// tokens per µs since ts, capped at capacity (which also caps tokens stored
// under a larger burst).
func tokenLevel(tokens float64, ts, now int64, capacity, rate float64) float64 {
	elapsed := max(now-ts, 0)
	level := tokens + float64(elapsed)*rate
	if level > capacity {
		level = capacity
	}
	return level
}

// decideTokenBucket decides one Ask on a token bucket of capacity Burst
// (0 = Events) refilled at Events per Window. ok reports whether st holds
// stored state (a missing bucket is full). It returns the state to store
// when the Ask is allowed and charges.
func decideTokenBucket(st tokenBucket, ok bool, now int64, p params) (decision, tokenBucket) {
	capacity := float64(p.events)
	if p.burst > 0 {
		capacity = float64(p.burst)
	}
	rate := float64(p.events) / float64(p.windowUs)
	if !ok {
		st = tokenBucket{tokens: capacity, ts: now}
	}
	level := tokenLevel(st.tokens, st.ts, now, capacity, rate)
	need := float64(p.need())
	if level >= need {
		after := level - float64(p.cost)
		d := decision{
			allowed:   true,
			remaining: floorUnits(after),
			resetUs:   ceilUs((capacity - after) / rate),
		}
		d.expireAt = now + d.resetUs + secondUs
		return d, tokenBucket{tokens: after, ts: now}
	}
	d := decision{
		remaining: floorUnits(level),
		resetUs:   ceilUs((capacity - level) / rate),
		retryUs:   p.windowUs, // more than the capacity: never
	}
	if need <= capacity {
		// The first instant at which the stored state refills to need.
		wait := ceilUs((need - st.tokens) / rate)
		for i := 0; i < maxRetrySteps && tokenLevel(st.tokens, st.ts, st.ts+wait, capacity, rate) < need; i++ {
			wait++
		}
		for i := 0; i < maxRetrySteps && tokenLevel(st.tokens, st.ts, st.ts+wait-1, capacity, rate) >= need; i++ {
			wait--
		}
		d.retryUs = max(st.ts+wait-now, 1)
	}
	return d, st
}
