package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// Every prepared template shape expands exactly as Caddy's replacer does.
func TestTemplateExpandsAsReplacer(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "http://example.com/v1/items?user=u1&user=u2", nil)
	req.Header.Set("X-API-Key", "key-1")
	req.Header.Add("X-Multi", "a")
	req.Header.Add("X-Multi", "b")
	req.Header.Set("X-Empty", "")
	w := httptest.NewRecorder()
	req = caddyhttp.PrepareRequest(req, caddy.NewReplacer(), w, nil)
	repl := req.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	caddyhttp.SetVar(req.Context(), "client_ip", "192.0.2.7")
	caddyhttp.SetVar(req.Context(), "n", 42)
	repl.Set("custom.static", "static-value")

	tests := []struct {
		tmpl string
		kind templateKind
	}{
		{"literal", templateLiteral},
		{"", templateLiteral},
		{"{http.request.header.X-API-Key}", templateHeader},
		{"{http.request.header.x-api-key}", templateHeader},
		{"{http.request.header.X-Multi}", templateHeader},
		{"{http.request.header.X-Empty}", templateHeader},
		{"{http.request.header.X-Absent}", templateHeader},
		{"{http.vars.client_ip}", templateOne},
		{"{http.vars.n}", templateOne},
		{"{http.vars.unset}", templateOne},
		{"{http.request.method}", templateOne},
		{"{http.request.uri.query.user}", templateOne},
		{"{custom.static}", templateOne},
		{"{no.such.placeholder}", templateOne},
		{"{http.request.header.}", templateOne},
		{"{}", templateAny},
		{"key-{http.request.header.X-API-Key}", templateAny},
		{"{http.request.method}:{http.vars.client_ip}", templateAny},
		{`{http.request.header.X-API-Key\}`, templateAny},
		{"{unclosed", templateAny},
		{"closed}", templateAny},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			tm := newTemplate(tt.tmpl)
			if tm.kind != tt.kind {
				t.Errorf("newTemplate(%q).kind = %d, want %d", tt.tmpl, tm.kind, tt.kind)
			}
			want := repl.ReplaceAll(tt.tmpl, "")
			if got := tm.expand(req, repl); got != want {
				t.Errorf("expand(%q) = %q, want %q (ReplaceAll)", tt.tmpl, got, want)
			}
		})
	}
}

// A zone keyed by a request header expands its key without allocating.
func TestTemplateHeaderDoesNotAllocate(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("X-API-Key", "key-1")
	repl := caddy.NewReplacer()
	tm := newTemplate("{http.request.header.X-API-Key}")
	var got string
	if n := testing.AllocsPerRun(100, func() { got = tm.expand(req, repl) }); n != 0 {
		t.Errorf("expand allocates %.0f times, want 0", n)
	}
	if got != "key-1" {
		t.Errorf("expand = %q, want %q", got, "key-1")
	}
}
