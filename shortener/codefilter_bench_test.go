package shortener

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

func openTestEmbeddedB(b *testing.B) *store.EmbeddedStore {
	b.Helper()
	s, err := store.OpenEmbedded(filepath.Join(b.TempDir(), "shortener.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkRedirectL1HitFiltered is BenchmarkRedirectL1Hit with a built
// code filter (embedded store): an L1 hit never consults it, so the two
// must match.
func BenchmarkRedirectL1HitFiltered(b *testing.B) {
	s := openTestEmbeddedB(b)
	if err := s.Create(b.Context(), link.Link{Code: "abc1234", LongURL: "https://example.com/some/long/path"}); err != nil {
		b.Fatal(err)
	}
	h := newHandler(b, s, func(h *Handler) { h.LocalCacheTTL = caddy.Duration(time.Hour) })
	waitFilterReady(b, h)
	r, _ := http.NewRequest("GET", "http://sho.rt/abc1234", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	r.Header.Set("Referer", "https://news.example.com/item?id=42")
	w := &discardWriter{h: http.Header{}}
	if err := h.ServeHTTP(w, r, nextHandler); err != nil || w.h.Get("Location") == "" {
		b.Fatalf("warming: %v %v", err, w.h)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		if err := h.ServeHTTP(w, r, nextHandler); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedirectFilterReject measures a scan: distinct unknown codes
// answered 404 by the code filter (no Redis, no store, nothing cached).
func BenchmarkRedirectFilterReject(b *testing.B) {
	s := openTestEmbeddedB(b)
	h := newHandler(b, s, func(h *Handler) { h.ClicksOff = true })
	waitFilterReady(b, h)
	codes := testCodes(b, 100_000)
	reqs := make([]*http.Request, len(codes))
	// Served inside a Caddy server without error routes: the 404 is
	// written directly, as in production.
	ctx := context.WithValue(context.Background(), caddyhttp.ServerCtxKey, &caddyhttp.Server{})
	for i, c := range codes {
		reqs[i], _ = http.NewRequestWithContext(ctx, "GET", "http://sho.rt/"+c, nil)
	}
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if err := h.ServeHTTP(w, reqs[i%len(reqs)], nextHandler); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if v := redirectsMetric(h, sourceFilter, resultNotFound); v == 0 {
		b.Fatal("no code answered by the filter")
	}
}
