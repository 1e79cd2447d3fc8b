package limiter

// requestLog is sliding_log state: the times (µs, ascending) of the units
// taken within the last window, times[head:]. It holds only what was seen,
// never more than Events entries. Stored in Redis as a sorted set scored by
// time.
type requestLog struct {
	times []int64
	head  int
}

// len is the number of live entries.
func (l *requestLog) len() int64 { return int64(len(l.times) - l.head) }

// trim drops the entries that left the window (time <= now − window) and,
// should Events have been lowered, the oldest ones beyond Events.
func (l *requestLog) trim(now int64, p params) {
	cut := now - p.windowUs
	for l.head < len(l.times) && l.times[l.head] <= cut {
		l.head++
	}
	if l.len() > p.events {
		l.head = len(l.times) - int(p.events)
	}
	if l.head == len(l.times) {
		l.times, l.head = l.times[:0], 0
	}
}

// decide trims the log and decides one Ask: it passes when the units in
// the window plus its cost stay within Events. Call take to charge.
func (l *requestLog) decide(now int64, p params) decision {
	l.trim(now, p)
	count := l.len()
	need := p.need()
	if count+need <= p.events {
		d := decision{allowed: true, remaining: p.events - count - p.cost, expireAt: now + p.windowUs}
		switch {
		case p.cost > 0:
			d.resetUs = p.windowUs
		case count > 0:
			d.resetUs = l.times[len(l.times)-1] + p.windowUs - now
		}
		return d
	}
	d := decision{remaining: p.events - count, retryUs: p.windowUs}
	if count > 0 {
		d.resetUs = l.times[len(l.times)-1] + p.windowUs - now
	}
	if need <= p.events {
		// The (count+need−events)-th oldest entry must leave first.
		oldest := l.times[l.head+int(count+need-p.events)-1]
		d.retryUs = max(oldest+p.windowUs-now, 1)
	}
	return d
}

// take records cost units at now (after an allowed decide).
func (l *requestLog) take(now, cost int64) {
	if l.head > 0 && len(l.times)+int(cost) > cap(l.times) {
		n := copy(l.times, l.times[l.head:])
		l.times, l.head = l.times[:n], 0
	}
	for range cost {
		l.times = append(l.times, now)
	}
}
