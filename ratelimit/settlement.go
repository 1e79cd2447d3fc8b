package ratelimit

import (
	"context"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Settling cost_after zones: when the response ends, however it ends, the
// real cost is read from the response and the difference to what the
// request was charged at admission is charged or given back. The
// settlements of one store leave in one call, with the request's leases on
// that store (see limiter.Settler); approximate zones count the difference
// in process and send it with their next sync.

// settleTimeout bounds a request's settlement: detached from the request,
// whose client may be gone, like the release of its leases.
const settleTimeout = leaseReleaseTimeout

// settlement is what the cost_after zones of one request owe one store.
type settlement struct {
	store   limiter.Leaser // the store or the local fallback
	settler limiter.Settler
	at      time.Time // the admission's clock (Result.Now)
	items   []limiter.Settlement
	from    []*zoneDecision // the decision of each item
	buf     [2]limiter.Settlement
	fromBuf [2]*zoneDecision
}

func (s *settlement) add(d *zoneDecision, delta int64) {
	if s.items == nil {
		s.items, s.from, s.at = s.buf[:0], s.fromBuf[:0], d.res.Now
	}
	s.items = append(s.items, limiter.Settlement{Key: d.ask.Key, Limit: d.ask.Limit, Delta: delta, Thresholds: d.ask.Thresholds, Usage: d.ask.Usage})
	s.from = append(s.from, d)
}

// settle settles the cost_after zones of ds at the end of a response with
// header h and status (ended: the handler chain returned without error;
// else the real cost never arrived). The leases of rl on a store that
// settles are given back in the same call.
func (h *Handler) settle(r *http.Request, repl *caddy.Replacer, ds []zoneDecision, rl *requestLeases, hdr http.Header, status int, ended bool) {
	var onStore, onLocal settlement
	for i := range ds {
		d := &ds[i]
		if d.zone.costAfter == nil || !d.decided() {
			continue
		}
		if len(d.zone.CountStatus) > 0 && (!ended || !d.zone.counts(status)) {
			continue // count_status: settled only when the status counts
		}
		delta := h.realCost(d, hdr, r, repl, ended) - d.charged()
		switch {
		case delta == 0:
		case d.zone.approx != nil: // counted here, sent with the next sync
			if delta > 0 {
				d.zone.approx.charge(d.ask.Key, d.ask.Limit, delta)
			} else {
				d.zone.approx.give(d.ask.Key, -delta)
			}
		case d.state == stateStore:
			onStore.add(d, delta)
		case d.state == stateLocal:
			onLocal.add(d, delta)
		}
	}
	if onStore.items != nil {
		onStore.settler, _ = h.store.(limiter.Settler)
		onStore.store, _ = h.store.(limiter.Leaser)
		h.sendSettlement(&onStore, rl)
	}
	if onLocal.items != nil {
		onLocal.settler, onLocal.store = h.local, h.local
		h.sendSettlement(&onLocal, rl)
	}
}

// charged is the units the admission charged the zone: its ask's cost,
// none when it refused (a dry_run zone: the request went on without it).
func (d *zoneDecision) charged() int64 {
	if !d.res.Allowed {
		return 0
	}
	return d.ask.Cost
}

// realCost is what the request really cost zone d: the value of its
// cost_after, or the fallback (default: the zone's cost) when it never
// arrived or is not a valid number (logged once per key per interval).
func (h *Handler) realCost(d *zoneDecision, hdr http.Header, r *http.Request, repl *caddy.Replacer, ended bool) int64 {
	c := d.zone.costAfter
	v := ""
	if ended {
		v = c.value(hdr, r, repl)
	}
	if v == "" {
		if ce := h.logger.Check(zapcore.DebugLevel, "rate limit cost_after never arrived: fallback charged"); ce != nil {
			ce.Write(zap.String("zone", d.zone.Name), zap.Bool("response_ended", ended))
		}
		return c.fallbackFor(d.cost)
	}
	n, ok := parseRealCost(v)
	if !ok {
		d.zone.inputs[inputCostAfter].Inc()
		if ce := h.logger.Check(h.invalidLevel(d.zone, d.ask.Key), "rate limit cost_after is not a non-negative integer of at most 2^50: fallback charged"); ce != nil {
			ce.Write(zap.String("zone", d.zone.Name), zap.String("value", loggedValue(v)))
		}
		return c.fallbackFor(d.cost)
	}
	return n
}

// sendSettlement sends s with the leases of rl on the same store, which
// are given back then (else, on failure, by giveBack as usual).
func (h *Handler) sendSettlement(s *settlement, rl *requestLeases) {
	if s.settler == nil { // not a store that settles: no such handler
		return
	}
	var lbuf [2]limiter.Lease
	leases := lbuf[:0]
	var held []*heldLease
	if rl != nil {
		for _, hl := range rl.leases {
			if hl != nil && hl.store == s.store {
				leases = append(leases, hl.lease)
				held = append(held, hl)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	results, err := s.settler.Settle(ctx, s.at, s.items, leases)
	if s.settler != h.local { // the local fallback's counts are this instance's
		for i, r := range results {
			if r.Crossed != 0 {
				h.tellThresholds(s.from[i], r.Crossed, r.Used)
			}
		}
	}
	if err != nil {
		h.logger.Warn("rate limit cost_after not settled: the pre-charged cost stands", zap.Error(err))
		return
	}
	if len(held) == 0 {
		return
	}
	h.refresher.remove(held)
	for i, hl := range rl.leases {
		for _, g := range held {
			if hl == g {
				rl.leases[i] = nil
			}
		}
	}
}
