package shortener

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/maypok86/otter/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/internal/tracing"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/registry"
	"github.com/edgekit/caddy-edgekit/shortener/store"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
	"github.com/edgekit/caddy-edgekit/shortener/webhookapi"
)

// webhooks are the handler's signed, at-least-once webhooks: the
// `webhooks` block, the dispatcher delivering the store's outbox and the
// API under <api>/webhooks. Embedded in Handler: its fields are the
// handler's.
type webhooks struct {
	// Signed, at-least-once webhooks for link changes and clicks
	// (docs/webhooks.md): endpoints are managed through the API under
	// `<api>/webhooks`. Needs the `postgres` or `embedded` store. Default:
	// off.
	Webhooks *WebhooksConfig `json:"webhooks,omitempty"`

	hookAPI    *webhookapi.API
	hookStop   context.CancelFunc
	hookDone   chan struct{}
	hookStore  webhookStore
	hookClicks *atomic.Bool // the click sink's Events: on while an endpoint takes clicks
	hookTags   *otter.Cache[string, []string]
	hookStats  *webhookMetrics
	// traced: the tracer provider of the last traced request, for the
	// delivery spans (noted by serveAPI and by redirects counting clicks);
	// nil without webhooks
	traced *tracing.Provider
}

// WebhooksConfig configures webhook delivery.
type WebhooksConfig struct {
	// Prefixes of private or reserved addresses that endpoints may reach
	// (an operator's own receivers, `10.0.0.0/8`). Every other private,
	// loopback, link-local or reserved address is refused, when an
	// endpoint is saved and again at every connection. Default: none.
	AllowPrivate []string `json:"allow_private,omitempty"`
	// Timeout bounds one delivery, from connecting to the end of reading
	// the answer (at most 64 KiB of it). Default: `10s`.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Concurrency bounds the deliveries in flight per endpoint. Default: 8.
	Concurrency int `json:"concurrency,omitempty"`
	// Retention: settled messages and outbox events older than this are
	// deleted (hourly). Default: `168h` (7 days).
	Retention caddy.Duration `json:"retention,omitempty"`
}

// Defaults and bounds of the webhooks block.
const (
	DefaultWebhookRetention = 7 * 24 * time.Hour
	MaxWebhookTimeout       = time.Minute
	MaxWebhookConcurrency   = 64
	webhookPruneEvery       = time.Hour
	webhookBacklogEvery     = 15 * time.Second
	webhookExpirySweep      = time.Minute
)

// webhookStore is a store that keeps webhooks beside its outbox.
type webhookStore interface {
	webhook.Store
	link.EventLog
}

// provisionWebhooks turns the outbox on and starts delivering.
func (h *Handler) provisionWebhooks(ctx caddy.Context) error {
	cfg := h.Webhooks
	if cfg == nil {
		return nil
	}
	s := h.store
	if sh, ok := s.(sharedStore); ok {
		s = sh.Store
	}
	switch s := s.(type) {
	case *store.PostgresStore:
		s.Events, h.hookStore = true, s
	case *store.EmbeddedStore:
		s.Events, h.hookStore = true, s
	default:
		return fmt.Errorf("shortener: webhooks need the postgres or embedded store, not %T", s)
	}
	allow, err := parsePrefixes(cfg.AllowPrivate)
	if err != nil {
		return fmt.Errorf("shortener: webhooks allow_private: %w", err)
	}
	policy, err := urlpolicy.New([]string{"http", "https"}, h.DenyHosts, false)
	if err != nil {
		return fmt.Errorf("shortener: webhooks: %w", err)
	}
	client := &webhook.Client{Timeout: time.Duration(cfg.Timeout), Allow: allow}
	h.hookClicks = h.clickEventsFlag()
	h.hookTags = otter.Must(&otter.Options[string, []string]{MaximumSize: 10000, ExpiryCalculator: otter.ExpiryWriting[string, []string](time.Minute)})
	h.hookAPI = &webhookapi.API{Store: h.hookStore, Log: h.hookStore, Client: client, Now: h.now, Changed: h.webhooksChanged,
		CheckURL: func(raw string) (string, error) { return policy.Check(raw) }}
	if h.hookStats, err = newWebhookMetrics(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("shortener webhooks metrics: %w", err)
	}
	h.traced = new(tracing.Provider)
	d := &webhook.Dispatcher{Store: h.hookStore, Log: h.hookStore, Client: client, Render: h.renderEvent, Tags: h.clickTags, Owner: instanceName(),
		Concurrency: cfg.Concurrency,
		Observe: func(id string, m webhook.Message, a webhook.Attempt, o webhook.Outcome) {
			h.hookStats.attempts.WithLabelValues(o.String()).Inc()
			if tp := h.traced.Get(); tp != nil {
				traceDelivery(tp, id, m, a, o)
			}
		},
		OnError: func(id string, err error) {
			h.hookStats.errors.Inc()
			h.logger.Warn("webhook delivery", zap.String("endpoint", id), zap.Error(err))
		}}
	h.webhooksChanged()
	registry.SetOutbox(h, s.(link.EventRecorder))
	run, stop := context.WithCancel(context.Background())
	h.hookStop, h.hookDone = stop, make(chan struct{})
	go func() {
		defer close(h.hookDone)
		go h.maintainWebhooks(run)
		d.Run(run)
	}()
	return nil
}

// traceDelivery records the attempt a of message m to endpoint id as the
// root span of a new trace, `shortener.webhook.deliver`, with tp, the
// tracer provider of the last traced request (the outbox keeps no trace
// context: the span links to no request). A failure is told by its
// outcome, not its error, which may quote the endpoint's URL.
func traceDelivery(tp trace.TracerProvider, id string, m webhook.Message, a webhook.Attempt, o webhook.Outcome) {
	end := time.Now()
	_, span := tp.Tracer(tracerScope).Start(context.Background(), "shortener.webhook.deliver",
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(end.Add(-a.Latency)),
		trace.WithAttributes(
			attribute.String("shortener.webhook.endpoint", id),
			attribute.String("shortener.webhook.message", m.ID),
			attribute.String("shortener.webhook.type", m.Type),
			attribute.Int("shortener.webhook.events", m.Events),
			attribute.Int("shortener.webhook.attempt", m.Attempts+1),
			attribute.Int("http.response.status_code", a.Status),
			attribute.String("shortener.webhook.outcome", o.String()),
		))
	if o != webhook.Delivered {
		span.SetStatus(codes.Error, o.String())
	}
	span.End(trace.WithTimestamp(end))
}

// parsePrefixes reads CIDR prefixes (an address alone is its /32 or /128).
func parsePrefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR prefix or an address", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// clickEventsFlag is the click sink's Events switch, nil without one.
func (h *Handler) clickEventsFlag() *atomic.Bool {
	if h.clicks == nil {
		return nil
	}
	switch s := h.clicks.Cfg.Sink.(type) {
	case *store.PostgresClickSink:
		return &s.Events
	case *store.EmbeddedClickSink:
		return &s.Events
	}
	return nil
}

// stopWebhooks ends delivery (Cleanup).
func (h *Handler) stopWebhooks() {
	if h.hookStop != nil {
		h.hookStop()
		<-h.hookDone
		h.hookStop = nil
	}
}

// instanceName names this instance in webhook leases: the host name and
// random hex, unique per handler.
func instanceName() string {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// unmarshalWebhooks reads `webhooks [{ allow_private <prefix...>; timeout
// <d>; concurrency <n>; retention <d> }]`.
func (r *reading) unmarshalWebhooks(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	if r.Webhooks == nil {
		r.Webhooks = &WebhooksConfig{}
	}
	return webhooksBlock.Parse(d, r)
}

var webhooksBlock = cfparse.Block[reading]{
	Kind:       "webhooks setting",
	Hint:       " (want allow_private, timeout, concurrency or retention)",
	Repeatable: []string{"allow_private"},
	Each:       func(r *reading, d *caddyfile.Dispenser) { r.pos["webhooks."+d.Val()] = cfparse.PosOf(d) },
	Subdirectives: cfparse.Table[reading]{
		"allow_private": func(r *reading, d *caddyfile.Dispenser) error {
			args, err := cfparse.Args(d)
			r.Webhooks.AllowPrivate = append(r.Webhooks.AllowPrivate, args...)
			return err
		},
		"timeout": func(r *reading, d *caddyfile.Dispenser) error {
			v, err := cfparse.PositiveDurationArg(d)
			r.Webhooks.Timeout = caddy.Duration(v)
			return err
		},
		"concurrency": func(r *reading, d *caddyfile.Dispenser) (err error) {
			r.Webhooks.Concurrency, err = cfparse.PositiveIntArg(d)
			return err
		},
		"retention": func(r *reading, d *caddyfile.Dispenser) error {
			v, err := cfparse.PositiveDurationArg(d)
			r.Webhooks.Retention = caddy.Duration(v)
			return err
		},
	},
}

// validateWebhooks judges the webhooks block.
func (h *Handler) validateWebhooks(pos positions) error {
	c := h.Webhooks
	if c == nil {
		return nil
	}
	if h.Store != "" && h.Store != "embedded" && h.Store != "postgres" {
		return pos.at("webhooks", errors.New("webhooks need the postgres or embedded store"))
	}
	if _, err := parsePrefixes(c.AllowPrivate); err != nil {
		return pos.at("webhooks.allow_private", err)
	}
	switch {
	case c.Timeout < 0 || time.Duration(c.Timeout) > MaxWebhookTimeout:
		return pos.at("webhooks.timeout", fmt.Errorf("timeout %v is not between 0 and %v", time.Duration(c.Timeout), MaxWebhookTimeout))
	case c.Concurrency < 0 || c.Concurrency > MaxWebhookConcurrency:
		return pos.at("webhooks.concurrency", fmt.Errorf("concurrency %d is not 1 to %d", c.Concurrency, MaxWebhookConcurrency))
	case c.Retention != 0 && time.Duration(c.Retention) < webhookPruneEvery:
		return pos.at("webhooks.retention", fmt.Errorf("retention %v is shorter than %v", time.Duration(c.Retention), webhookPruneEvery))
	case h.API == "":
		return pos.at("webhooks", errors.New("webhooks are managed through the API: set api"))
	}
	return nil
}
