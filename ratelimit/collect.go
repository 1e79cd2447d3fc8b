package ratelimit

import (
	"net/http"
	"unsafe"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// zoneDecisionFor is what a request asks of zone z: its key, its cost and
// its quota (plan, placeholders, then brake), each checked before any
// store is asked, so that a value a client sends is a decision, never a
// store failure. An error is the request's answer: 400 when a field the
// key is read from was sent more than once or a cost that is not a valid
// number (logged once per key per interval: see invalidlog.go), 500 for a
// quota that is not (see limiter.CheckLimit).
//
// A cost past what the zone's quota can ever grant, before the brake, is
// asked as that largest cost + 1: the store refuses it whatever the key's
// state, with the zone's status and headers, and charges nothing (a
// count_status zone checks it now rather than charging it later).
func (h *Handler) zoneDecisionFor(z *Zone, r *http.Request, repl *caddy.Replacer, brake float64) (zoneDecision, error) {
	if f := repeatedField(z.once, r); f != nil {
		z.inputs[inputRepeated].Inc()
		if c := h.logger.Check(zapcore.DebugLevel, "rate limit key field sent more than once"); c != nil {
			c.Write(zap.String("zone", z.Name), zap.Error(f.err))
		}
		return zoneDecision{}, caddyhttp.Error(http.StatusBadRequest, f.err)
	}
	cost, err := z.requestCost(r, repl)
	if err != nil {
		z.inputs[inputCost].Inc()
		if c := h.logger.Check(h.invalidLevel(z, h.invalidKey(z, z.keyExpr.expand(r, repl))), "rate limit cost is not a non-negative integer: request refused with 400"); c != nil {
			c.Write(zap.String("zone", z.Name), zap.Error(err))
		}
		return zoneDecision{}, caddyhttp.Error(http.StatusBadRequest, err)
	}
	limit, source := z.limit, sourceStatic
	if z.quota != nil {
		if limit, source, err = z.quota.limitFor(r, repl); err != nil {
			z.inputs[inputQuota].Inc()
			h.logger.Error("rate limit quota", zap.String("zone", z.Name), zap.Error(err))
			return zoneDecision{}, caddyhttp.Error(http.StatusInternalServerError, err)
		}
	}
	over := cost > limit.MaxCost()
	if over {
		cost = limit.MaxCost() + 1
		z.inputs[inputCostOverQuota].Inc()
	}
	if brake < 1 {
		limit = braked(limit, brake)
	}
	d := zoneDecision{zone: z, key: z.keyExpr.expand(r, repl), cost: cost, source: source, ask: limiter.Ask{
		Limit: limit, Cost: cost,
	}}
	if len(z.CountStatus) > 0 && !over {
		d.ask.Cost = 0 // checked now, charged after the response
	}
	// A cost past the quota is bad input: never an offence.
	if !over && z.ban.Duration > 0 && !z.exempt.exempt(r, d.key) {
		d.ask.Ban = z.ban
	}
	d.ask.Notify = z.notify
	d.ask.Thresholds = z.marksFor(limit.Events)
	if z.keep > 0 {
		d.ask.Usage = limiter.Usage{Key: d.key, Keep: z.keep}
	}
	if limit.Algorithm == limiter.Concurrency && cost > 0 {
		d.ask.Lease = limiter.NewLeaseID()
	}
	return d, nil
}

// setStoreKeys sets the store key of every decision (see limiter.StoreKey), all
// in one allocation of n bytes; tag is the digest of the hash tag.
func (h *Handler) setStoreKeys(ds []zoneDecision, tag []byte, n int) {
	b := make([]byte, 0, n)
	for i := range ds {
		start := len(b)
		b = limiter.AppendStoreKey(b, h.prefix, ds[i].zone.Name, tag, ds[i].key)
		ds[i].ask.Key = unsafe.String(&b[start], len(b)-start) // b[start:] is never written again
	}
}
