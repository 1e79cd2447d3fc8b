package ratelimit

import (
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Refusal logs: a flood of refusals must not flood the logs. Per zone and
// interval (refusalLogEvery), the first refusal of each key is logged at
// info with everything that explains it (logRefusal); the others only at
// debug, and are summed in one info line, `rate limit refusals`, written
// with the zone's first refusal after the interval (or when the config
// unloads). The keys seen in an interval are bounded (refusalLogKeys per
// zone): past that, refusals of new keys are only counted.
const (
	refusalLogEvery = 10 * time.Second
	refusalLogKeys  = 4096
)

// zoneRefusals are one zone's refusal counts in the current interval.
type zoneRefusals struct {
	mu      sync.Mutex
	start   time.Time           // the interval's start; zero: none yet
	seen    map[string]struct{} // store keys logged at info in the interval
	refused int64               // refusals in the interval
	logged  int64               // of them, logged at info
	full    bool                // seen reached refusalLogKeys
}

// refusalSummary is the sum of one ended interval of a zone.
type refusalSummary struct {
	start           time.Time
	refused, logged int64
	keys            int
	full            bool
}

// admit counts a refusal of key at now. It returns the level to log it at
// (info for the key's first in the interval, debug otherwise) and, when
// the previous interval ended with refusals logged only at debug, its
// summary (ok).
func (r *zoneRefusals) admit(key string, now time.Time) (lvl zapcore.Level, sum refusalSummary, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.start.IsZero() || now.Sub(r.start) >= refusalLogEvery {
		sum, ok = r.take()
		r.start = now
	}
	r.refused++
	if _, dup := r.seen[key]; dup || r.full {
		return zapcore.DebugLevel, sum, ok
	}
	if r.seen == nil {
		r.seen = make(map[string]struct{})
	}
	r.seen[key] = struct{}{}
	r.full = len(r.seen) >= refusalLogKeys
	r.logged++
	return zapcore.InfoLevel, sum, ok
}

// take ends the interval: its summary when some refusals were not logged
// at info, and fresh counts. r.mu is held.
func (r *zoneRefusals) take() (refusalSummary, bool) {
	sum := refusalSummary{start: r.start, refused: r.refused, logged: r.logged, keys: len(r.seen), full: r.full}
	r.refused, r.logged, r.full = 0, 0, false
	if len(r.seen) > 64 {
		r.seen = nil // let a flood's set go
	} else {
		clear(r.seen)
	}
	return sum, sum.refused > sum.logged
}

// refusalLevel is the level to log a refusal of d at now; it writes the
// zone's summary of the previous interval first when one is due.
func (h *Handler) refusalLevel(d *zoneDecision, now time.Time) zapcore.Level {
	lvl, sum, ok := d.zone.refusals.admit(d.ask.Key, now)
	if ok {
		h.logSummary("rate limit refusals", "refused", d.zone.Name, sum, now)
	}
	return lvl
}

// logSummary writes one zone's summary line msg (`rate limit refusals`,
// `rate limit invalid input`): the events of the interval from sum.start
// to end under countField, how many were logged one per key, how many
// only at debug, and the distinct keys (capped: keys_capped).
func (h *Handler) logSummary(msg, countField, zone string, sum refusalSummary, end time.Time) {
	c := h.logger.Check(zapcore.InfoLevel, msg)
	if c == nil {
		return
	}
	c.Write(zap.String("zone", zone),
		zap.Int64(countField, sum.refused),
		zap.Int64("logged", sum.logged),
		zap.Int64("suppressed", sum.refused-sum.logged),
		zap.Int("keys", sum.keys),
		zap.Bool("keys_capped", sum.full),
		zap.Duration("interval", end.Sub(sum.start)))
}

// flushRefusals writes the summary of every zone's current interval (the
// config unloads).
func (h *Handler) flushRefusals() {
	if h.now == nil || h.logger == nil { // never provisioned
		return
	}
	now := h.now()
	for _, z := range h.Zones {
		h.flushInvalid(z, now)
		if z.refusals == nil {
			continue
		}
		z.refusals.mu.Lock()
		sum, ok := z.refusals.take()
		z.refusals.mu.Unlock()
		if ok {
			h.logSummary("rate limit refusals", "refused", z.Name, sum, now)
		}
	}
}

// logRefusal logs a refusal with what explains it: the zone, the outcome,
// what is left and the rule applied (the quota after plans, placeholders
// and brake, and where it came from); at info for the key's first in the
// zone's interval, else at debug and summed (see refusallog.go).
func (h *Handler) logRefusal(msg string, d *zoneDecision) {
	if !h.logger.Core().Enabled(zapcore.InfoLevel) {
		return // nothing of it would be written: no counts, no clock, no lock
	}
	c := h.logger.Check(h.refusalLevel(d, h.now()), msg)
	if c == nil {
		return
	}
	o := outcomeRefused
	if d.zone.DryRun {
		o = outcomeDryRunRefused
	}
	l := d.ask.Limit
	fields := make([]zap.Field, 0, 11)
	fields = append(fields,
		zap.String("zone", d.zone.Name),
		zap.String("outcome", outcomeNames[o]),
		zap.Int64("remaining", d.res.Remaining),
		zap.Duration("retry_after", d.res.RetryAfter),
		zap.String("algorithm", l.Algorithm),
		zap.Int64("events", l.Events),
		zap.Duration("window", l.Window),
		zap.String("quota", d.source.String()),
	)
	if l.Burst > 0 {
		fields = append(fields, zap.Int64("burst", l.Burst))
	}
	if f := h.brake.factor(); f < 1 {
		fields = append(fields, zap.Float64("brake", f))
	}
	if h.LogKeys {
		fields = append(fields, zap.String("key", d.key))
	}
	c.Write(fields...)
}
