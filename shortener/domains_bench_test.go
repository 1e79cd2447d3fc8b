package shortener

import (
	"net/http"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// BenchmarkRedirectLinkDomain is BenchmarkRedirectL1HitFiltered on a
// link domain: the Host read as a domain (canonical: no allocation), its
// key made (one allocation), then the same L1 hit.
func BenchmarkRedirectLinkDomain(b *testing.B) {
	s := openTestEmbeddedB(b)
	ctx := b.Context()
	if err := s.CreateDomain(ctx, link.Domain{Host: "go.example.com", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	if err := s.Create(ctx, link.Link{Code: link.DomainKey("go.example.com", "abc1234"), LongURL: "https://example.com/some/long/path"}); err != nil {
		b.Fatal(err)
	}
	h := newHandler(b, s, func(h *Handler) { h.LocalCacheTTL = caddy.Duration(time.Hour) })
	waitFilterReady(b, h)
	r, _ := http.NewRequest("GET", "http://go.example.com/abc1234", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	r.Header.Set("Referer", "https://news.example.com/item?id=42")
	w := &discardWriter{h: http.Header{}}
	if err := h.ServeHTTP(w, r, nextHandler); err != nil || w.h.Get("Location") != "https://example.com/some/long/path" {
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
