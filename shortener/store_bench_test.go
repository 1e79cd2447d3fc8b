package shortener

import (
	"context"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// BenchmarkStoreGet is the store read of a redirect that misses L1 and
// Redis: one link without metadata, on each store.
func BenchmarkStoreGet(b *testing.B) {
	ctx := context.Background()
	b.Run("postgres", func(b *testing.B) {
		p, err := pgpool.Get(testenv.Postgres(b), pgpool.Settings{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Release() })
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := store.OpenPostgres(octx, p.Pool)
		if err != nil {
			b.Fatal(err)
		}
		benchStoreGet(b, s)
	})
	b.Run("embedded", func(b *testing.B) {
		benchStoreGet(b, openTestEmbeddedB(b))
	})
}

func benchStoreGet(b *testing.B, s link.Store) {
	ctx := context.Background()
	if err := s.Create(ctx, link.Link{Code: "bench1", LongURL: "https://example.com/landing?utm_source=mail"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, "bench1"); err != nil {
			b.Fatal(err)
		}
	}
}
