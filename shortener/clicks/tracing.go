package clicks

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerScope names the tracer of the writer's spans.
const tracerScope = "github.com/edgekit/caddy-edgekit/shortener/clicks"

// MaxFlushLinks bounds the links of one flush span (the OpenTelemetry
// SDK's default link limit); the traced clicks past it are counted in
// shortener.clicks.unlinked.
const MaxFlushLinks = 128

// flushTrace is what the next flush span links to: the request spans of
// the traced clicks recorded since the last flush, and the tracer provider
// of the last of them (Caddy's tracing handler's own, not the global one).
// Untraced clicks leave it empty and their flushes start no span.
type flushTrace struct {
	mu       sync.Mutex
	tp       trace.TracerProvider
	links    []trace.Link
	unlinked int
}

// RecordTraced is Record for a click whose request is traced (ctx holds
// its recording span): the writer's next flush is traced, as a new trace
// whose span links to the request's. Untraced requests call Record, which
// holds nothing of the kind.
func (r *Recorder) RecordTraced(ctx context.Context, c Click) {
	span := trace.SpanFromContext(ctx)
	t := &r.trace
	t.mu.Lock()
	t.tp = span.TracerProvider()
	if len(t.links) < MaxFlushLinks {
		t.links = append(t.links, trace.Link{SpanContext: span.SpanContext()})
	} else {
		t.unlinked++
	}
	t.mu.Unlock()
	r.Record(c)
}

// flushSpan starts the root span of a flush of clicks in batches when
// traced clicks were recorded since the last one, linking to their
// requests' spans; nil otherwise.
func (r *Recorder) flushSpan(batches, clicks int) trace.Span {
	t := &r.trace
	t.mu.Lock()
	tp, links, unlinked := t.tp, t.links, t.unlinked
	t.links, t.unlinked = nil, 0
	t.mu.Unlock()
	if len(links) == 0 {
		return nil
	}
	to := "sink"
	if r.Cfg.Redis != nil {
		to = "redis_stream"
	}
	_, span := tp.Tracer(tracerScope).Start(context.Background(), "shortener.clicks.flush",
		trace.WithNewRoot(), trace.WithLinks(links...), trace.WithAttributes(
			attribute.Int("shortener.clicks.batches", batches),
			attribute.Int("shortener.clicks.clicks", clicks),
			attribute.Int("shortener.clicks.unlinked", unlinked),
			attribute.String("shortener.clicks.to", to),
		))
	return span
}

// endFlush ends a flush's span: failed when the clicks were given up.
func endFlush(span trace.Span, ok bool) {
	if !ok {
		span.SetStatus(codes.Error, "clicks given up at shutdown")
	}
	span.End()
}
