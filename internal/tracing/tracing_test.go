package tracing

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

type ctxKey int

// requestContext is a context as deep as a Caddy request's (the server,
// the replacer, vars, the original request, log fields...).
func requestContext() context.Context {
	ctx := context.Background()
	for i := range 8 {
		ctx = context.WithValue(ctx, ctxKey(i), i)
	}
	return ctx
}

func TestOnAndStart(t *testing.T) {
	if On(requestContext()) {
		t.Fatal("On(untraced) = true")
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, parent := tp.Tracer("test").Start(requestContext(), "request")
	if !On(ctx) {
		t.Fatal("On(traced) = false")
	}
	_, child := Start(ctx, "scope", "child")
	child.End()
	parent.End()
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != "child" || spans[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans %v: want child under request", spans)
	}
	var p *Provider
	p.Note(ctx) // nil: notes nothing
	if p.Get() != nil {
		t.Error("nil Provider has a provider")
	}
	p = new(Provider)
	if p.Get() != nil {
		t.Error("zero Provider has a provider before a request")
	}
	p.Note(ctx)
	if p.Get() != tp {
		t.Errorf("Provider.Get() = %v, want the request span's %v", p.Get(), tp)
	}
	if n := testing.AllocsPerRun(100, func() { p.Note(ctx) }); n != 0 {
		t.Errorf("Note of the same provider allocates %v times", n)
	}
}

// BenchmarkOnUntraced is what an untraced request pays for tracing: one
// context lookup through a request's context.
func BenchmarkOnUntraced(b *testing.B) {
	ctx := requestContext()
	b.ReportAllocs()
	for b.Loop() {
		if On(ctx) {
			b.Fatal("traced")
		}
	}
}
