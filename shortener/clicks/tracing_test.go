package clicks

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A flush carrying traced clicks is the root of a new trace linking to
// their requests' spans; a flush of untraced clicks starts no span.
func TestFlushSpanLinksTracedClicks(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r, err := NewRecorder(Config{Sink: discardSink{}, BatchSize: 10, BatchInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	click := func() Click { return Click{Code: "abc1234", At: time.Now(), Class: ClassBrowser} }
	r.Record(click())
	time.Sleep(50 * time.Millisecond) // flushed, untraced
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans for an untraced flush, want none", n)
	}
	ctx, req := tp.Tracer("test").Start(context.Background(), "request")
	r.RecordTraced(ctx, click())
	r.RecordTraced(ctx, click())
	req.End()
	deadline := time.Now().Add(5 * time.Second)
	var flush sdktrace.ReadOnlySpan
	for flush == nil && time.Now().Before(deadline) {
		for _, s := range rec.Ended() {
			if s.Name() == "shortener.clicks.flush" {
				flush = s
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if flush == nil {
		t.Fatal("no shortener.clicks.flush span")
	}
	if flush.Parent().IsValid() || flush.SpanContext().TraceID() == req.SpanContext().TraceID() {
		t.Errorf("flush span in the request's trace (parent %v): want a new trace", flush.Parent().SpanID())
	}
	links := flush.Links()
	if len(links) == 0 || !links[0].SpanContext.Equal(req.SpanContext()) {
		t.Errorf("flush links %v, want the request span %v", links, req.SpanContext().SpanID())
	}
}
