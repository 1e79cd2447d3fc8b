package store

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// BenchmarkRecordClickEvents: one click sink batch of 1,000 clicks put in
// the outbox in one transaction (the cost a click with a webhook on click
// adds to the click pipeline), per click.
func BenchmarkRecordClickEvents(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "bench.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	batch := clicks.Batch{Clicks: make([]clicks.Click, 1000)}
	for i := range batch.Clicks {
		batch.Clicks[i] = clicks.Click{Code: "bench01", At: time.Now(), Class: clicks.ClassBrowser, Country: "DE"}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		buf := getRecordBuffer()
		if err := db.Update(func(tx *bolt.Tx) error { return recordClickEvents(tx, true, []clicks.Batch{batch}, buf) }); err != nil {
			b.Fatal(err)
		}
		putRecordBuffer(buf)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch.Clicks)), "ns/click")
}
