package shortener

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

func TestAPIOperation(t *testing.T) {
	for _, tc := range []struct{ method, rest, want string }{
		{"GET", "/openapi.json", "getOpenAPI"},
		{"GET", "/links", "listLinks"},
		{"HEAD", "/links", "listLinks"},
		{"POST", "/links", "createLink"},
		{"GET", "/links/export", "exportLinks"},
		{"POST", "/links/batch", "createLinks"},
		{"GET", "/links/abc1234", "getLink"},
		{"DELETE", "/links/abc1234", "revokeLink"},
		{"GET", "/links/abc1234/stats", "getLinkStats"},
		{"POST", "/webhooks/wh_1/messages/m1/replay", "replayWebhookMessage"},
		{"GET", "/links/", "unknown"},
		{"GET", "/links/abc1234/nope", "unknown"},
		{"PUT", "/links", "unknown"},
		{"GET", "", "unknown"},
	} {
		if got := apiOperation(tc.method, tc.rest); got != tc.want {
			t.Errorf("apiOperation(%q, %q) = %q, want %q", tc.method, tc.rest, got, tc.want)
		}
	}
}

// Every operation of the document names the span of its own requests.
func TestAPIOperationCoversTheDocument(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range doc.Paths {
		rest := path
		for strings.Contains(rest, "{") {
			i, j := strings.IndexByte(rest, '{'), strings.IndexByte(rest, '}')
			rest = rest[:i] + "x1" + rest[j+1:]
		}
		for method, raw := range item {
			var op struct {
				OperationID string `json:"operationId"`
			}
			if json.Unmarshal(raw, &op) != nil || op.OperationID == "" {
				continue // parameters
			}
			n++
			if got := apiOperation(strings.ToUpper(method), rest); got != op.OperationID {
				t.Errorf("apiOperation(%s, %q) = %q, want %q", method, rest, got, op.OperationID)
			}
		}
	}
	if n < 20 {
		t.Errorf("%d operations checked, want the document's (at least 20)", n)
	}
}

// tracedServe serves one request to h in a context carrying a recording
// request span of tp, as Caddy's tracing handler would; it returns the
// response and the request span.
func tracedServe(t *testing.T, h *Handler, tp trace.TracerProvider, method, target, body string, header ...string) (*httptest.ResponseRecorder, trace.Span) {
	t.Helper()
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	defer span.End()
	ctx = context.WithValue(ctx, caddy.ReplacerCtxKey, caddy.NewReplacer())
	r := httptest.NewRequestWithContext(ctx, method, "http://sho.rt"+target, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	var he caddyhttp.HandlerError
	if err := h.ServeHTTP(w, r, nextHandler); errors.As(err, &he) {
		w.Code = he.StatusCode // as Caddy's error handling would answer
	} else if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	return w, span
}

// lastSpan is the last span named name rec ended, with its attributes.
func lastSpan(t *testing.T, rec *tracetest.SpanRecorder, name string) (sdktrace.ReadOnlySpan, map[attribute.Key]attribute.Value) {
	t.Helper()
	spans := rec.Ended()
	for i := len(spans) - 1; i >= 0; i-- {
		if spans[i].Name() == name {
			m := map[attribute.Key]attribute.Value{}
			for _, kv := range spans[i].Attributes() {
				m[kv.Key] = kv.Value
			}
			return spans[i], m
		}
	}
	t.Fatalf("no %s span", name)
	return nil, nil
}

func TestTracingLookupSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	s := newMemStore()
	s.links["abc1234"] = link.Link{Code: "abc1234", LongURL: "https://example.com/a"}
	s.links["gone123"] = link.Link{Code: "gone123", LongURL: "https://example.com/g", RevokedAt: time.Now()}
	h := newHandler(t, s, func(h *Handler) { h.LocalCacheTTL = caddy.Duration(time.Hour) })
	for _, tc := range []struct {
		code              string
		status            int
		tier              string
		negative, revoked bool
	}{
		{"abc1234", http.StatusFound, "store", false, false},
		{"abc1234", http.StatusFound, "l1", false, false},
		{"nope999", http.StatusNotFound, "store", true, false},
		{"gone123", http.StatusGone, "store", false, true},
	} {
		w, parent := tracedServe(t, h, tp, "GET", "/"+tc.code, "")
		if w.Code != tc.status {
			t.Fatalf("GET /%s = %d, want %d", tc.code, w.Code, tc.status)
		}
		span, a := lastSpan(t, rec, "shortener.lookup")
		if span.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("GET /%s: lookup span's parent %v, want the request span %v", tc.code, span.Parent().SpanID(), parent.SpanContext().SpanID())
		}
		for key, want := range map[attribute.Key]attribute.Value{
			"shortener.code":     attribute.StringValue(tc.code),
			"shortener.tier":     attribute.StringValue(tc.tier),
			"shortener.negative": attribute.BoolValue(tc.negative),
			"shortener.revoked":  attribute.BoolValue(tc.revoked),
		} {
			if got := a[key]; got != want {
				t.Errorf("GET /%s: %s = %s, want %s", tc.code, key, got.String(), want.String())
			}
		}
	}
}

func TestTracingAPISpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := newHandler(t, newMemStore(), nil)
	w, parent := tracedServe(t, h, tp, "POST", "/api/links", `{"long_url":"https://example.com/x","code":"api1234"}`, auth()...)
	if w.Code != http.StatusCreated {
		t.Fatalf("POST /api/links = %d %s", w.Code, w.Body)
	}
	span, _ := lastSpan(t, rec, "shortener.api.createLink")
	if span.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("api span's parent %v, want the request span %v", span.Parent().SpanID(), parent.SpanContext().SpanID())
	}
	if w, _ = tracedServe(t, h, tp, "GET", "/api/links/api1234", ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("GET without a key = %d, want 401", w.Code)
	}
	if _, a := lastSpan(t, rec, "shortener.api.getLink"); a["shortener.api.status"].AsInt64() != http.StatusUnauthorized {
		t.Errorf("shortener.api.status = %v, want 401", a["shortener.api.status"].String())
	}
}
