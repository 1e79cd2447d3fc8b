package shortener

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// BenchmarkBatchCreate is POST <api>/links/batch of 1,000 links with random
// codes and no metadata, through the handler into each store (no Redis):
// links/s is the creation rate.
func BenchmarkBatchCreate(b *testing.B) { onBenchStores(b, benchBatchCreate) }

// onBenchStores runs bench on a PostgreSQL store of its own and on an
// embedded one, as the sub-benchmarks postgres and embedded.
func onBenchStores(b *testing.B, bench func(b *testing.B, s link.Store)) {
	b.Run("postgres", func(b *testing.B) {
		s, _ := openPostgresOwn(b, testenv.Postgres(b), pgpool.Settings{})
		bench(b, s)
	})
	b.Run("embedded", func(b *testing.B) { bench(b, openTestEmbeddedB(b)) })
}

func benchBatchCreate(b *testing.B, s link.Store) {
	h := newHandler(b, s, nil)
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		items := make([]string, maxBatch)
		for i := range items {
			items[i] = fmt.Sprintf(`{"long_url":"https://example.com/landing/%d?utm_source=mail"}`, n)
			n++
		}
		w := serve(b, h, "POST", "/api/links/batch", `{"links":[`+strings.Join(items, ",")+`]}`, auth()...)
		if w.Code != http.StatusOK || strings.Contains(w.Body.String(), `"error"`) {
			b.Fatalf("batch = %d %.200s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "links/s")
}
