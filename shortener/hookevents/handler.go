// Package hookevents is the events handler shortener_webhooks: it
// records Caddy events of the rate limiter in the webhook outboxes of the
// shorteners in the config.
package hookevents

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/promreg"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/registry"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler records Caddy events of the rate limiter in the outboxes
// of the shorteners with webhooks, for the endpoints that take
// ratelimit.exceeded, ratelimit.ban_set or ratelimit.threshold. It is an
// events handler,
// subscribed with Caddy's `events` global option:
//
//	{
//		events {
//			on ratelimit_exceeded shortener_webhooks
//			on ratelimit_ban_set shortener_webhooks
//			on ratelimit_threshold shortener_webhooks
//		}
//	}
//
// Events are emitted on the request path, so Handle only queues them; one
// goroutine writes the queue into every outbox in batches (each store
// once, however many handlers use it), trying a store that fails again
// with backoff. An event that finds the queue full, or that a store still
// refuses when Caddy stops, is lost and counted
// (caddy_shortener_webhook_events_lost_total).
type Handler struct {
	// Queue bounds the events waiting to be written. Default: 10000.
	Queue int `json:"queue,omitempty"`

	q      chan caddy.Event
	stop   chan struct{}
	done   chan struct{}
	logger *zap.Logger
	lost   prometheus.Counter
}

// Bounds of the shortener_webhooks events handler.
const (
	DefaultQueue = 10000
	MaxQueue     = 1000000
	batchSize    = 500
	writeEvery   = 100 * time.Millisecond
	writeTimeout = 5 * time.Second
	maxBackoff   = 30 * time.Second // the longest wait before trying a failing store again
)

// eventTypes maps the Caddy events the handler records to their
// webhook types; other events are ignored.
var eventTypes = map[string]string{
	"ratelimit_exceeded":  webhook.TypeRatelimitExceeded,
	"ratelimit_ban_set":   webhook.TypeRatelimitBanSet,
	"ratelimit_threshold": webhook.TypeRatelimitThreshold,
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "events.handlers.shortener_webhooks",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision checks the queue's bound and starts the writer.
func (w *Handler) Provision(ctx caddy.Context) error {
	if w.Queue == 0 {
		w.Queue = DefaultQueue
	}
	if w.Queue < 1 || w.Queue > MaxQueue {
		return fmt.Errorf("shortener_webhooks: queue %d is not 1 to %d", w.Queue, MaxQueue)
	}
	w.logger = ctx.Logger()
	lost := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "caddy", Subsystem: "shortener", Name: "webhook_events_lost_total",
		Help: "Caddy events (the rate limiter's) that never reached an outbox: the queue was full, or a store refused them until Caddy stopped."})
	var err error
	if reg := ctx.GetMetricsRegistry(); reg != nil {
		if lost, err = promreg.Register(reg, lost); err != nil {
			return fmt.Errorf("shortener_webhooks metrics: %w", err)
		}
	}
	w.lost = lost
	w.q, w.stop, w.done = make(chan caddy.Event, w.Queue), make(chan struct{}), make(chan struct{})
	go w.run()
	return nil
}

// Handle queues the event, if it is one webhooks announce.
func (w *Handler) Handle(_ context.Context, e caddy.Event) error {
	if _, ok := eventTypes[e.Name()]; !ok {
		return nil
	}
	select {
	case w.q <- e:
	default:
		w.lost.Inc()
	}
	return nil
}

// Cleanup writes what is queued (within writeTimeout) and stops.
func (w *Handler) Cleanup() error {
	if w.stop != nil {
		close(w.stop)
		<-w.done
		w.stop = nil
	}
	return nil
}

// run writes the queue every writeEvery, or at once when a batch
// is full, until Cleanup.
func (w *Handler) run() {
	defer close(w.done)
	ws := writer{pending: map[any]*pendingEvents{}, lost: w.lost, logger: w.logger, limit: w.Queue}
	t := time.NewTicker(writeEvery)
	defer t.Stop()
	var batch []link.Event
	for {
		select {
		case e := <-w.q:
			if batch = append(batch, outboxEvent(e)); len(batch) < batchSize {
				continue
			}
		case <-t.C:
		case <-w.stop:
			for len(w.q) > 0 {
				batch = append(batch, outboxEvent(<-w.q))
			}
			ws.write(batch, time.Now(), true)
			return
		}
		ws.write(batch, time.Now(), false)
		batch = batch[:0:0]
	}
}

// outboxEvent is a Caddy event as the outbox keeps it: its id (Caddy's,
// so logs and webhooks name it alike), webhook type, time and data.
func outboxEvent(e caddy.Event) link.Event {
	id := e.ID()
	data, err := json.Marshal(e.Data)
	if err != nil {
		data = []byte("{}")
	}
	return link.Event{ID: "evt_" + hex.EncodeToString(id[:]), Type: eventTypes[e.Name()], At: e.Timestamp().UTC(), Data: data}
}

// writer writes batches into every registered outbox, keeping
// per store what it has not written yet.
type writer struct {
	pending map[any]*pendingEvents
	lost    prometheus.Counter
	logger  *zap.Logger
	limit   int // events kept per store, the queue's bound
}

// pendingEvents are a store's events not written yet, and when to try.
type pendingEvents struct {
	events []link.Event
	next   time.Time
	wait   time.Duration
}

// write adds batch to every outbox's pending events and writes those that
// are due; final writes everything once more and counts what fails as
// lost.
func (ws *writer) write(batch []link.Event, now time.Time, final bool) {
	boxes := registry.Outboxes()
	for key, p := range ws.pending {
		if _, ok := boxes[key]; !ok {
			ws.lose(p.events, "the shortener holding them is gone")
			delete(ws.pending, key)
		}
	}
	for key, rec := range boxes {
		p := ws.pending[key]
		if p == nil {
			p = &pendingEvents{}
			ws.pending[key] = p
		}
		p.events = append(p.events, batch...)
		if over := len(p.events) - ws.limit; over > 0 {
			ws.lose(p.events[:over], "the store was down and the queue filled up")
			p.events = p.events[over:]
		}
		if len(p.events) == 0 || now.Before(p.next) && !final {
			continue
		}
		ws.flush(rec, p, now, final)
	}
}

func (ws *writer) flush(rec link.EventRecorder, p *pendingEvents, now time.Time, final bool) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	err := rec.RecordEvents(ctx, p.events)
	if err == nil {
		p.events, p.wait, p.next = p.events[:0:0], 0, time.Time{}
		return
	}
	if final {
		ws.lose(p.events, err.Error())
		p.events = nil
		return
	}
	p.wait = min(max(2*p.wait, time.Second), maxBackoff)
	p.next = now.Add(p.wait)
	ws.logger.Warn("webhooks: recording Caddy events; trying again", zap.Int("events", len(p.events)), zap.Duration("in", p.wait), zap.Error(err))
}

func (ws *writer) lose(events []link.Event, why string) {
	if len(events) == 0 {
		return
	}
	ws.lost.Add(float64(len(events)))
	ws.logger.Error("webhooks: Caddy events lost", zap.Int("events", len(events)), zap.String("why", why))
}

// UnmarshalCaddyfile reads `shortener_webhooks [{ queue <n> }]`, the
// handler of an `on` line of the events global option.
func (w *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the handler's name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "queue":
			n, err := cfparse.PositiveIntArg(d)
			if err != nil {
				return err
			}
			if n > MaxQueue {
				return d.Errf("queue %d is over %d", n, MaxQueue)
			}
			w.Queue = n
		default:
			return d.Errf("unknown shortener_webhooks setting %q (want queue)", d.Val())
		}
	}
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner     = (*Handler)(nil)
	_ caddy.CleanerUpper    = (*Handler)(nil)
	_ caddyevents.Handler   = (*Handler)(nil)
	_ caddyfile.Unmarshaler = (*Handler)(nil)
)
