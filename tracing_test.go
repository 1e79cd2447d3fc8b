package edgekit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// memoryExporter receives the spans of Caddy's tracing handler when
// OTEL_TRACES_EXPORTER names it: Caddy builds its tracer provider's
// exporter with autoexport, which takes registered exporters by name.
var (
	memoryExporter     = tracetest.NewInMemoryExporter()
	registerMemoryOnce sync.Once
)

const memoryExporterName = "edgekit_test_memory"

// useMemoryExporter makes the next tracer provider Caddy's tracing
// handler builds export to memoryExporter, every 10ms.
func useMemoryExporter(t *testing.T) {
	t.Helper()
	registerMemoryOnce.Do(func() {
		autoexport.RegisterSpanExporter(memoryExporterName, func(context.Context) (sdktrace.SpanExporter, error) {
			return memoryExporter, nil
		})
	})
	t.Setenv("OTEL_TRACES_EXPORTER", memoryExporterName)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	memoryExporter.Reset()
}

// TestTracing: with Caddy's tracing handler on, a redirect through a
// rate limit zone yields Caddy's request span with two children, the
// ratelimit.decide and shortener.lookup spans, with their attributes; an
// API request's span is named after its operation.
func TestTracing(t *testing.T) {
	useMemoryExporter(t)
	admin, port := testenv.FreePort(t), testenv.FreePort(t)
	const apiKey = "tracing-test-key-0123456789"
	tester := newCaddyTester(t, admin)
	tester.InitServer(fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[3]d
	auto_https off
	skip_install_trust
}

http://localhost:%[2]d {
	tracing {
		span caddy_request
	}
	ratelimit {
		zone per_client {
			key {http.request.header.X-Client}
			events 100
			window 1m
		}
	}
	shortener {
		store embedded "%[4]s"
		api /api
		api_key %[5]s
		clicks on
		clicks_batch 1 20ms
		webhooks {
			allow_private 127.0.0.0/8
		}
	}
}
`, admin, port, testenv.FreePort(t), filepath.Join(t.TempDir(), "links.db"), apiKey), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	base := fmt.Sprintf("http://localhost:%d", port)
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	send := func(method, path, body string, header ...string) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("X-Client", "client-1")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	if st := send("POST", "/api/webhooks", `{"url":"`+hook.URL+`/in","types":["link.created","click"]}`,
		"Authorization", "Bearer "+apiKey); st != http.StatusCreated {
		t.Fatalf("create webhook endpoint: %d", st)
	}
	if st := send("POST", "/api/links", `{"long_url":"https://example.com/traced","code":"traced1"}`,
		"Authorization", "Bearer "+apiKey); st != http.StatusCreated {
		t.Fatalf("create link: %d", st)
	}
	for range 2 { // from the store, then from L1
		if st := send("GET", "/traced1", ""); st != http.StatusFound {
			t.Fatalf("GET /traced1 = %d, want 302", st)
		}
	}

	decide := waitSpan(t, "ratelimit.decide", func(s tracetest.SpanStub) bool {
		return spanAttrs(s)["ratelimit.outcome"].AsString() == "allowed" && hasChild(s, "shortener.lookup")
	})
	request, ok := spanByID(decide.Parent.SpanID())
	if !ok || request.Name != "caddy_request" || request.SpanKind != trace.SpanKindServer {
		t.Fatalf("ratelimit.decide's parent = %q (kind %v), want Caddy's server span caddy_request", request.Name, request.SpanKind)
	}
	lookup, _ := childNamed(request, "shortener.lookup")
	checkAttrs(t, decide, map[attribute.Key]attribute.Value{
		"ratelimit.zones":   attribute.StringSliceValue([]string{"per_client"}),
		"ratelimit.store":   attribute.StringValue("memory"),
		"ratelimit.outcome": attribute.StringValue("allowed"),
	})
	if d := spanAttrs(decide)["ratelimit.key_digest"].AsStringSlice(); len(d) != 1 || len(d[0]) != 32 || strings.Contains(d[0], "client-1") {
		t.Errorf("ratelimit.key_digest = %q, want one 32-hex digest", d)
	}
	checkAttrs(t, lookup, map[attribute.Key]attribute.Value{
		"shortener.code":     attribute.StringValue("traced1"),
		"shortener.negative": attribute.BoolValue(false),
		"shortener.revoked":  attribute.BoolValue(false),
	})
	if tier := spanAttrs(lookup)["shortener.tier"].AsString(); tier != "store" && tier != "l1" {
		t.Errorf("shortener.lookup: shortener.tier = %q, want store or l1", tier)
	}
	for _, tier := range []string{"store", "l1"} {
		waitSpan(t, "shortener.lookup", func(s tracetest.SpanStub) bool { return spanAttrs(s)["shortener.tier"].AsString() == tier })
	}
	create := waitSpan(t, "shortener.api.createLink", func(tracetest.SpanStub) bool { return true })
	if parent, ok := spanByID(create.Parent.SpanID()); !ok || parent.Name != "caddy_request" {
		t.Errorf("shortener.api.createLink's parent = %q, want caddy_request", parent.Name)
	}
	checkBackgroundSpans(t, request.SpanContext)
}

// checkBackgroundSpans: the click of the redirect whose request span is
// request is flushed in a new trace linking to it, and the webhook
// deliveries are new traces too.
func checkBackgroundSpans(t *testing.T, request trace.SpanContext) {
	t.Helper()
	flush := waitSpan(t, "shortener.clicks.flush", func(s tracetest.SpanStub) bool {
		return slices.ContainsFunc(s.Links, func(l sdktrace.Link) bool { return l.SpanContext.Equal(request) })
	})
	if flush.Parent.IsValid() || flush.SpanContext.TraceID() == request.TraceID() {
		t.Errorf("shortener.clicks.flush: parent %v, trace %v: want the root of a new trace", flush.Parent.SpanID(), flush.SpanContext.TraceID())
	}
	checkAttrs(t, flush, map[attribute.Key]attribute.Value{"shortener.clicks.to": attribute.StringValue("sink")})
	for _, typ := range []string{"link.created", "click"} {
		d := waitSpan(t, "shortener.webhook.deliver", func(s tracetest.SpanStub) bool {
			return spanAttrs(s)["shortener.webhook.type"].AsString() == typ
		})
		if d.Parent.IsValid() {
			t.Errorf("shortener.webhook.deliver (%s) has a parent: want the root of a new trace", typ)
		}
		checkAttrs(t, d, map[attribute.Key]attribute.Value{
			"shortener.webhook.outcome": attribute.StringValue("delivered"),
			"http.response.status_code": attribute.IntValue(http.StatusNoContent),
			"shortener.webhook.attempt": attribute.IntValue(1),
		})
	}
}

// waitSpan waits for an exported span named name that ok accepts.
func waitSpan(t *testing.T, name string, ok func(tracetest.SpanStub) bool) tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, s := range memoryExporter.GetSpans() {
			if s.Name == name && ok(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range memoryExporter.GetSpans() {
				names = append(names, s.Name)
			}
			t.Fatalf("no %s span exported; got %q", name, names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func spanByID(id trace.SpanID) (tracetest.SpanStub, bool) {
	for _, s := range memoryExporter.GetSpans() {
		if s.SpanContext.SpanID() == id {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

// childNamed is the exported child of parent named name.
func childNamed(parent tracetest.SpanStub, name string) (tracetest.SpanStub, bool) {
	for _, s := range memoryExporter.GetSpans() {
		if s.Name == name && s.Parent.SpanID() == parent.SpanContext.SpanID() &&
			s.SpanContext.TraceID() == parent.SpanContext.TraceID() {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

// hasChild reports whether s's parent has an exported child named name.
func hasChild(s tracetest.SpanStub, name string) bool {
	parent, ok := spanByID(s.Parent.SpanID())
	if !ok {
		return false
	}
	_, ok = childNamed(parent, name)
	return ok
}

func spanAttrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func checkAttrs(t *testing.T, s tracetest.SpanStub, want map[attribute.Key]attribute.Value) {
	t.Helper()
	got := spanAttrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %s, want %s", s.Name, k, got[k].String(), v.String())
		}
	}
}
