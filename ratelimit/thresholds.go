package ratelimit

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Threshold events: a fixed_window zone with `notify 80% 100%` tells the
// first time each key's count of a period reaches each percentage of its
// quota, once across every instance sharing the store: the store decides
// it in the call that charges (limiter.Ask.Thresholds), and keeps what it
// told with the window's count. The tell is the Caddy event
// ratelimit_threshold when something subscribes to it, else an info log.
//
// Data: zone, store_key, key (with log_keys only), threshold (the
// percentage), used (the units counted when it was crossed), quota,
// period_start and period_end (RFC 3339, UTC).
const EventThreshold = "ratelimit_threshold"

// unmarshalNotify reads `notify <percent>% ...`.
func (z *Zone) unmarshalNotify(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return d.ArgErr()
	}
	for _, a := range args {
		n, err := strconv.Atoi(strings.TrimSuffix(a, "%"))
		if err != nil {
			return d.Errf("invalid notify threshold '%s': must be a percentage of the quota such as 80%%", a)
		}
		z.Notify = append(z.Notify, n)
	}
	return nil
}

// checkNotify checks `notify`: percentages from 1 to 100, rising, at most
// limiter.MaxThresholds, on a fixed_window zone counted on the store.
func (z *Zone) checkNotify() error {
	if len(z.Notify) == 0 {
		return nil
	}
	switch {
	case z.Algorithm != limiter.FixedWindow:
		return onField("notify", fmt.Errorf("notify needs algorithm fixed_window (its window is the period), not %s", cmp.Or(z.Algorithm, DefaultAlgorithm)))
	case z.Approximate != 0:
		return onField("notify", errors.New("notify does not work with approximate"))
	case len(z.Notify) > limiter.MaxThresholds:
		return onField("notify", fmt.Errorf("%d thresholds: at most %d", len(z.Notify), limiter.MaxThresholds))
	}
	for i, p := range z.Notify {
		if p < 1 || p > 100 || i > 0 && p <= z.Notify[i-1] {
			return onField("notify", fmt.Errorf("invalid notify %v: percentages from 1%% to 100%%, rising", z.Notify))
		}
	}
	return nil
}

// marksFor returns the unit counts of the zone's thresholds for a quota of
// events: each percentage of it rounded up, at least 1; percentages
// falling on one count share it (see percentsAt).
func (z *Zone) marksFor(events int64) []int64 {
	if len(z.Notify) == 0 {
		return nil
	}
	if events == z.limit.Events && z.marks != nil {
		return z.marks
	}
	marks := make([]int64, 0, len(z.Notify))
	for _, p := range z.Notify {
		m := max(ceilPercent(events, p), 1)
		if len(marks) == 0 || m > marks[len(marks)-1] {
			marks = append(marks, m)
		}
	}
	return marks
}

// ceilPercent is ⌈events × p / 100⌉ (events at most 2^50: no overflow).
func ceilPercent(events int64, p int) int64 {
	return (events*int64(p) + 99) / 100
}

// percentsAt returns the percentages whose mark for a quota of events is m.
func (z *Zone) percentsAt(events, m int64) []int {
	var ps []int
	for _, p := range z.Notify {
		if max(ceilPercent(events, p), 1) == m {
			ps = append(ps, p)
		}
	}
	return ps
}

// tellThresholds tells the thresholds the store says d's charge crossed
// (crossed: bits of d.ask.Thresholds), the count then being used.
func (h *Handler) tellThresholds(d *zoneDecision, crossed uint8, used int64) {
	quota := d.ask.Limit.Events
	start, end := periodOf(d.ask.Limit, d.res.Now)
	for i, m := range d.ask.Thresholds {
		if crossed&(1<<i) == 0 {
			continue
		}
		for _, p := range d.zone.percentsAt(quota, m) {
			data := map[string]any{
				"zone":         d.zone.Name,
				"store_key":    d.ask.Key,
				"threshold":    p,
				"used":         used,
				"quota":        quota,
				"period_start": start.UTC().Format(time.RFC3339),
				"period_end":   end.UTC().Format(time.RFC3339),
			}
			if h.LogKeys {
				data["key"] = d.key
			}
			if h.events != nil && h.events.threshold {
				h.emit(EventThreshold, data)
				continue
			}
			fields := make([]zap.Field, 0, len(data))
			for k, v := range data {
				fields = append(fields, zap.Any(k, v))
			}
			h.logger.Info("rate limit threshold crossed", fields...)
		}
	}
}

// periodOf is the fixed window of limit containing at.
func periodOf(limit limiter.Limit, at time.Time) (start, end time.Time) {
	if limit.Calendar.On() {
		return limit.Calendar.Period(at)
	}
	w := limit.Window.Microseconds()
	s := at.UnixMicro() - at.UnixMicro()%w
	return time.UnixMicro(s), time.UnixMicro(s + w)
}

// tellDecided tells the thresholds the store's answers in ds crossed.
func (h *Handler) tellDecided(ds []zoneDecision) {
	for i := range ds {
		d := &ds[i]
		if d.res.Crossed != 0 && d.state == stateStore && !d.cached {
			h.tellThresholds(d, d.res.Crossed, d.ask.Limit.Events-d.res.Remaining)
		}
	}
}
