// Package tracing starts the modules' OpenTelemetry spans as children of
// the request span Caddy's `tracing` handler put in the request context,
// with that span's own tracer provider (Caddy's is not the global one).
// A request without a recording span costs one context lookup: no span,
// no allocation (see docs/operations.md#tracing).
package tracing

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// On reports whether ctx carries a recording span: whether the request is
// traced. Attributes are built only then.
func On(ctx context.Context) bool {
	return trace.SpanFromContext(ctx).IsRecording()
}

// Start starts the span name as a child of the span in ctx, from the
// tracer scope of the parent span's provider. Call it only when On(ctx).
func Start(ctx context.Context, scope, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	tp := trace.SpanFromContext(ctx).TracerProvider()
	return tp.Tracer(scope).Start(ctx, name, opts...)
}

// Fail marks span as failed with err.
func Fail(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// Provider remembers the tracer provider of the last traced request, for
// the spans of work that runs outside any request (a click flush, a
// webhook delivery): they start new traces with the provider Caddy's
// `tracing` handler uses. Until a request is traced there is none, and no
// such span is started. The zero Provider is ready to use; a nil one notes
// nothing.
type Provider struct {
	tp atomic.Pointer[providerBox]
}

type providerBox struct{ tp trace.TracerProvider }

// Note remembers the provider of the span in ctx. Call it only when
// On(ctx); it allocates only when the provider changes (a config reload).
func (p *Provider) Note(ctx context.Context) {
	if p == nil {
		return
	}
	tp := trace.SpanFromContext(ctx).TracerProvider()
	if b := p.tp.Load(); b != nil && b.tp == tp {
		return
	}
	p.tp.Store(&providerBox{tp})
}

// Get returns the provider last noted, nil if none.
func (p *Provider) Get() trace.TracerProvider {
	if p == nil {
		return nil
	}
	if b := p.tp.Load(); b != nil {
		return b.tp
	}
	return nil
}
