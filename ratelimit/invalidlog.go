package ratelimit

import (
	"strconv"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Invalid input logs: a cost or a real cost (cost_after) that is not a
// valid number is what a client sent, so a flood of them must not flood
// the logs either. They are throttled as refusals are (see refusallog.go):
// per zone and interval (refusalLogEvery), each key's first is logged at
// warn, the others at debug, summed in one `rate limit invalid input` line
// written with the zone's first after the interval (or when the config
// unloads). A logged value is cut to maxLoggedValue bytes.

// maxLoggedValue bounds a client's value in a log line or an error.
const maxLoggedValue = 64

// loggedValue is s as a log or an error shows it: quoted, cut to
// maxLoggedValue bytes, with its full length when cut.
func loggedValue(s string) string {
	if len(s) <= maxLoggedValue {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:maxLoggedValue]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// invalidLevel is the level to log zone z's invalid input of the key
// whose store key is key: warn for the key's first in the interval, else
// debug; it writes the zone's summary of the previous interval first when
// one is due.
func (h *Handler) invalidLevel(z *Zone, key string) zapcore.Level {
	now := h.now()
	lvl, sum, ok := z.invalid.admit(key, now)
	if ok {
		h.logSummary("rate limit invalid input", "count", z.Name, sum, now)
	}
	if lvl == zapcore.InfoLevel {
		return zapcore.WarnLevel
	}
	return lvl
}

// invalidKey is the store key of the zone's key for r (a digest: bounded
// whatever the client sent), naming it in the throttle.
func (h *Handler) invalidKey(z *Zone, value string) string {
	return limiter.StoreKey(h.prefix, z.Name, "", value)
}

// flushInvalid writes the summary of zone z's current interval of invalid
// inputs (the config unloads).
func (h *Handler) flushInvalid(z *Zone, now time.Time) {
	if z.invalid == nil {
		return
	}
	z.invalid.mu.Lock()
	sum, ok := z.invalid.take()
	z.invalid.mu.Unlock()
	if ok {
		h.logSummary("rate limit invalid input", "count", z.Name, sum, now)
	}
}
