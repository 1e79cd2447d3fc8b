package ratelimit

import (
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Caddy events the handler emits, through Caddy's event system (the
// `events` app: any subscriber, e.g. a global `events { on ... }` option,
// can act on them). Never one per request:
//
//   - ratelimit_exceeded: the first refusal of a key in a window, across
//     every instance sharing the store (the store says which refusal is
//     the first: Ask.Notify).
//   - ratelimit_ban_set: a refusal set a ban on a key.
//   - ratelimit_threshold: a key's count reached a `notify` percentage of
//     its quota, first in its period (see thresholds.go).
//
// Data: zone, store_key, key (the expanded key, only with log_keys: keys
// are often secrets), retry_after (whole seconds, as Retry-After);
// ratelimit_ban_set adds ban (its duration in seconds) and until (RFC 3339).
const (
	EventExceeded = "ratelimit_exceeded"
	EventBanSet   = "ratelimit_ban_set"
)

// eventSink emits the handler's events; nil when nothing subscribes.
type eventSink struct {
	app *caddyevents.App
	ctx caddy.Context // the handler's: names it as the events' origin
	// exceeded, banSet, threshold: something observes these events
	exceeded, banSet, threshold bool
}

// provisionEvents finds the events app (loaded by the http app before its
// handlers) and asks the stores to tell first refusals only when an
// ratelimit_exceeded event would be observed.
func (h *Handler) provisionEvents(ctx caddy.Context) {
	app, err := ctx.AppIfConfigured("events")
	if err != nil {
		return // a handler provisioned outside a Caddy config (tests)
	}
	ev, ok := app.(*caddyevents.App)
	if !ok {
		return
	}
	s := &eventSink{app: ev, ctx: ctx, exceeded: subscribed(ev, EventExceeded), banSet: subscribed(ev, EventBanSet),
		threshold: subscribed(ev, EventThreshold)}
	if !s.exceeded && !s.banSet && !s.threshold {
		return
	}
	h.events = s
	for _, z := range h.Zones {
		// dry_run zones refuse nothing; concurrency zones have no window
		z.notify = s.exceeded && !z.DryRun && z.limit.Algorithm != limiter.Concurrency
	}
}

// subscribed reports whether something subscribes to the event name of
// this module: a subscription of the config (bound only when the events
// app starts, after the handlers are provisioned) or one bound already.
func subscribed(app *caddyevents.App, name string) bool {
	if app.ShouldEmit(name) {
		return true
	}
	const id = "http.handlers.ratelimit"
	for _, sub := range app.Subscriptions {
		if len(sub.Events) > 0 && !slices.Contains(sub.Events, name) && !slices.Contains(sub.Events, "") {
			continue
		}
		if len(sub.Modules) == 0 || slices.ContainsFunc(sub.Modules, func(m caddy.ModuleID) bool {
			return m == "" || m == id || strings.HasPrefix(id, string(m)+".")
		}) {
			return true
		}
	}
	return false
}

// emitEvents emits the events of the store's answers in ds: answers of the
// deny cache never carry news.
func (h *Handler) emitEvents(ds []zoneDecision) {
	for i := range ds {
		d := &ds[i]
		if d.state != stateStore || d.cached || d.res.Allowed {
			continue
		}
		if d.res.BanSet && h.events.banSet {
			data := h.eventData(d)
			data["ban"] = retryAfterSeconds(d.res.RetryAfter)
			data["until"] = d.res.Now.Add(d.res.RetryAfter).UTC().Format(time.RFC3339)
			h.emit(EventBanSet, data)
		}
		if d.res.First && d.zone.notify {
			h.emit(EventExceeded, h.eventData(d))
		}
	}
}

// approxExceeded emits the ratelimit_exceeded events of the approximate
// zone z, found by its syncs (without the expanded key: the syncs know
// only store keys).
func (h *Handler) approxExceeded(z *Zone) func(string, limiter.Result) {
	return func(storeKey string, res limiter.Result) {
		h.emit(EventExceeded, map[string]any{
			"zone":        z.Name,
			"store_key":   storeKey,
			"retry_after": retryAfterSeconds(res.RetryAfter),
		})
	}
}

// eventData is what every event of d carries.
func (h *Handler) eventData(d *zoneDecision) map[string]any {
	data := map[string]any{
		"zone":        d.zone.Name,
		"store_key":   d.ask.Key,
		"retry_after": retryAfterSeconds(d.res.RetryAfter),
	}
	if h.LogKeys {
		data["key"] = d.key
	}
	return data
}

func (h *Handler) emit(name string, data map[string]any) {
	e := h.events.app.Emit(h.events.ctx, name, data)
	if e.Aborted != nil {
		h.logger.Debug("rate limit event aborted by a subscriber", zap.String("event", name), zap.Error(e.Aborted))
	}
}
