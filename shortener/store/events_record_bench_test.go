package store

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// BenchmarkRecordClickEvents: one click sink batch of 1,000 clicks on a
// link, each from a visitor of its own, put in the outbox in one
// transaction (the cost a click with a webhook on click adds to the click
// pipeline), per click.
func BenchmarkRecordClickEvents(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "bench.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	batch := clicks.Batch{Clicks: make([]clicks.Click, 1000)}
	for i := range batch.Clicks {
		batch.Clicks[i] = clicks.Click{Code: "bench01", At: time.Now(), Class: clicks.ClassBrowser, Country: "DE", Visitor: uint64(i) + 1}
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

// BenchmarkEventsAfterClicks: the outbox's click events read back as the
// webhook dispatcher reads them (pages of 500 into one slice, each
// click's JSON rendered from its record into one scratch buffer), per
// event.
func BenchmarkEventsAfterClicks(b *testing.B) {
	s := openOutbox(b)
	batch := make([]clicks.Click, 10000)
	for i := range batch {
		batch[i] = clicks.Click{Code: "bench01", At: time.Now(), Class: clicks.ClassBrowser, Country: "DE", Device: "desktop",
			OS: "linux", Browser: "firefox", Referrer: "example.com", Visitor: uint64(i) + 1}
	}
	recordSink(b, s, batch)
	b.ReportAllocs()
	b.ResetTimer()
	var page []link.Event
	var scratch []byte
	for b.Loop() {
		n := 0
		for cur := (link.EventCursor{}); ; {
			var err error
			page, scratch, cur, err = s.AppendEventsAfter(b.Context(), page[:0], scratch[:0], cur, 500)
			if err != nil || len(page) == 0 {
				break
			}
			n += len(page)
		}
		if n != len(batch) {
			b.Fatalf("read %d events", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/event")
}
