package ratelimit

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// tracedGet is get(path, headers...) with a context carrying a recording
// request span, as Caddy's tracing handler sets it; the span is ended
// when the test ends.
func tracedGet(t *testing.T, tp trace.TracerProvider, path string, headers ...string) (*http.Request, trace.Span) {
	t.Helper()
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	t.Cleanup(func() { span.End() })
	return get(path, headers...).WithContext(ctx), span
}

// attrs returns a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// decideSpans are the ratelimit.decide spans rec ended.
func decideSpans(rec *tracetest.SpanRecorder) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "ratelimit.decide" {
			out = append(out, s)
		}
	}
	return out
}

func TestTracingDecideSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := &Handler{Zones: []*Zone{zone("api", 1, time.Hour), zone("ip", 100, time.Hour)}}
	provision(t, h)
	next := &statusHandler{}
	for i, want := range []struct {
		status  int
		outcome string
		zones   []string
	}{
		{http.StatusOK, "allowed", []string{"allowed", "allowed"}},
		{http.StatusTooManyRequests, "refused", []string{"refused", "allowed"}},
	} {
		req, parent := tracedGet(t, tp, "/", "X-API-Key", "secret-key")
		if res := do(h, next, req); res.status != want.status {
			t.Fatalf("request %d: status %d, want %d", i, res.status, want.status)
		}
		spans := decideSpans(rec)
		if len(spans) != i+1 {
			t.Fatalf("request %d: %d ratelimit.decide spans, want %d", i, len(spans), i+1)
		}
		s := spans[i]
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("request %d: span parent %v, want the request span %v", i, s.Parent().SpanID(), parent.SpanContext().SpanID())
		}
		a := attrs(s)
		digest := string(limiter.AppendDigest(nil, "secret-key"))
		for key, want := range map[attribute.Key]attribute.Value{
			"ratelimit.zones":         attribute.StringSliceValue([]string{"api", "ip"}),
			"ratelimit.store":         attribute.StringValue("memory"),
			"ratelimit.outcome":       attribute.StringValue(want.outcome),
			"ratelimit.zone_outcomes": attribute.StringSliceValue(want.zones),
			"ratelimit.key_digest":    attribute.StringSliceValue([]string{digest, digest}),
		} {
			if got := a[key]; got != want {
				t.Errorf("request %d: %s = %v, want %v", i, key, got.String(), want.String())
			}
		}
		if _, ok := a["ratelimit.key"]; ok {
			t.Errorf("request %d: ratelimit.key set without log_keys", i)
		}
	}
}

func TestTracingDecideSpanLogKeysAndFailure(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	z := zone("api", 10, time.Hour)
	z.OnError = "closed"
	h := &Handler{Zones: []*Zone{z}, LogKeys: true}
	h.store = &failingStore{}
	provision(t, h)
	req, _ := tracedGet(t, tp, "/", "X-API-Key", "k1")
	if res := do(h, &statusHandler{}, req); res.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", res.status)
	}
	spans := decideSpans(rec)
	if len(spans) != 1 {
		t.Fatalf("%d ratelimit.decide spans, want 1", len(spans))
	}
	a := attrs(spans[0])
	if got := a["ratelimit.key"].AsStringSlice(); !slices.Equal(got, []string{"k1"}) {
		t.Errorf("ratelimit.key = %q, want [k1] (log_keys)", got)
	}
	if got := a["ratelimit.outcome"].AsString(); got != "fail_closed" {
		t.Errorf("ratelimit.outcome = %q, want fail_closed", got)
	}
	if got := a["ratelimit.breaker"].AsString(); got != "closed" {
		t.Errorf("ratelimit.breaker = %q, want closed", got)
	}
	if st := spans[0].Status(); st.Code != codes.Error {
		t.Errorf("span status %v, want Error", st)
	}
}

// Without a recording span in the context (tracing off), nothing is
// started and a decision allocates no more than untraced.
func TestTracingOffNoSpanNoAllocation(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.NeverSample()))
	h := &Handler{Zones: []*Zone{zone("api", 1_000_000_000, time.Hour)}}
	provision(t, h)
	plain := benchRequest(get("/", "X-API-Key", "k"), nil)
	req, _ := tracedGet(t, tp, "/", "X-API-Key", "k") // sampled out: not recording
	unsampled := benchRequest(req, nil)
	next := &statusHandler{}
	w := &nopWriter{h: http.Header{}}
	serve := func(r *http.Request) func() {
		return func() { _ = h.ServeHTTP(w, r, next) }
	}
	base, off := testing.AllocsPerRun(200, serve(plain)), testing.AllocsPerRun(200, serve(unsampled))
	if off > base {
		t.Errorf("a request sampled out allocates %v times, untraced %v", off, base)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans ended, want none", n)
	}
}

// nopWriter keeps only its header map.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(int)             {}

// On Redis the span names the store and the breaker's state.
func TestTracingDecideSpanRedis(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := &Handler{Zones: []*Zone{zone("api", 10, time.Hour)}, Redis: sharedRedis(t)}
	provision(t, h)
	req, _ := tracedGet(t, tp, "/", "X-API-Key", "k1")
	if res := do(h, &statusHandler{}, req); res.status != http.StatusOK {
		t.Fatalf("status %d, want 200", res.status)
	}
	spans := decideSpans(rec)
	if len(spans) != 1 {
		t.Fatalf("%d ratelimit.decide spans, want 1", len(spans))
	}
	a := attrs(spans[0])
	for key, want := range map[attribute.Key]string{
		"ratelimit.store": "redis", "ratelimit.breaker": "closed", "ratelimit.outcome": "allowed",
	} {
		if got := a[key].AsString(); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
}

// BenchmarkHandlerMemoryOneZoneTraced is BenchmarkHandlerMemoryOneZone
// with the request traced (an SDK provider exporting nowhere): what the
// ratelimit.decide span costs when tracing is on.
func BenchmarkHandlerMemoryOneZoneTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("bench").Start(context.Background(), "request")
	defer span.End()
	h := &Handler{Zones: []*Zone{zone("bench", 1_000_000_000, time.Second)}}
	benchmarkHandlerContext(b, h, ctx)
}
