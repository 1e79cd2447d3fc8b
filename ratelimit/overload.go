package ratelimit

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Overload: a decision this process could not send to the store in time
// (limiter.ErrOverloaded: its local queue was full or too slow) is load,
// not a store failure. It never counts in store_errors_total, never feeds
// the breaker and never applies on_error: the request is refused with 503
// and Retry-After: 1, never let through (a flood must not open the
// limiter), and counted with the outcome `overloaded`. A dry_run zone
// never refuses: when only dry_run zones are overloaded the request
// passes.

// refuseOverloaded answers a request whose decision was overloaded: 503
// unless every overloaded zone is dry_run; ok reports whether it answered.
func (h *Handler) refuseOverloaded(w http.ResponseWriter, repl *caddy.Replacer, ds []zoneDecision, err error) (bool, error) {
	pick := -1
	for i := range ds {
		if ds[i].state != stateOverloaded {
			continue
		}
		ds[i].zone.counters[outcomeOverloaded].Inc()
		if pick < 0 && !ds[i].zone.DryRun {
			pick = i
		}
	}
	h.warnOverloaded(ds, "rate limit queue overloaded; refused with 503")
	if pick < 0 {
		return false, nil
	}
	w.Header()[hdrRetryAfter] = []string{"1"}
	repl.Set("http.ratelimit.zone", ds[pick].zone.Name)
	repl.Set("http.ratelimit.retry_after", "1")
	return true, caddyhttp.Error(http.StatusServiceUnavailable, err)
}

// warnOverloaded logs an overloaded decision (its overloaded zones, or all
// of ds for a charge after the response), at most once per warnEvery.
func (h *Handler) warnOverloaded(ds []zoneDecision, msg string) {
	suppressed, ok := h.overloaded.allow(h.now())
	if !ok {
		return
	}
	c := h.logger.Check(zapcore.WarnLevel, msg)
	if c == nil {
		return
	}
	zones := make([]string, 0, len(ds))
	for i := range ds {
		if ds[i].state == stateOverloaded {
			zones = append(zones, ds[i].zone.Name)
		}
	}
	if len(zones) == 0 {
		for i := range ds {
			zones = append(zones, ds[i].zone.Name)
		}
	}
	c.Write(zap.Strings("zones", zones), zap.Int64("suppressed", suppressed))
}
