package shortener

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// BenchmarkRedirectMaxClicks is an L1 hit of a link with max_clicks: the
// redirect pays the store's counter (one UPDATE in PostgreSQL, one write
// transaction in the embedded store) on top of BenchmarkRedirectL1Hit.
// max_clicks is at its bound, so the link does not run out.
func BenchmarkRedirectMaxClicks(b *testing.B) { onBenchStores(b, benchMaxClicks) }

func benchMaxClicks(b *testing.B, s link.Store) {
	err := s.Create(context.Background(), link.Link{Code: "limited", LongURL: "https://example.com/some/long/path", MaxClicks: link.MaxMaxClicks})
	if err != nil {
		b.Fatal(err)
	}
	h := newHandler(b, s, func(h *Handler) { h.LocalCacheTTL = caddy.Duration(time.Hour); h.ClicksOff = true })
	r, _ := http.NewRequest("GET", "http://sho.rt/limited", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		if err := h.ServeHTTP(w, r, nextHandler); err != nil || w.h.Get("Location") == "" {
			b.Fatal(err, w.h)
		}
	}
}
