// Command importgen writes n links as an NDJSON import file (the
// export's format, a link.ImportItem per line) for make bench's import
// step (scripts/bench_import.sh): codes, destinations, creation times and
// click totals on every line, titles and tags on a third, notes and
// expiries on a fifth, revocations on every hundredth. The same n gives the same file.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

func main() {
	n := flag.Int("n", 1_000_000, "how many links (1 to 100,000,000)")
	out := flag.String("o", "", "the file to write (required)")
	flag.Parse()
	if *out == "" || *n < 1 || *n > 100_000_000 {
		log.Fatal("importgen: -o <file> is required and -n must be 1 to 100,000,000")
	}
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	for i := range *n {
		if err := enc.Encode(item(i)); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

// item is the i-th line.
func item(i int) link.ImportItem {
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Second)
	clicks := int64(i % 1_000)
	it := link.ImportItem{
		Code:      fmt.Sprintf("im%07d", i),
		LongURL:   fmt.Sprintf("https://example.com/articles/%d/some-readable-slug?utm_source=bench&n=%d", i%50_000, i),
		CreatedAt: created.Format(time.RFC3339),
		Clicks:    &clicks,
	}
	if i%3 == 0 {
		it.Title, it.Tags = fmt.Sprintf("Article %d: a title of ordinary length", i), []string{"bench", fmt.Sprintf("t%d", i%40)}
	}
	if i%5 == 0 {
		it.Notes, it.ExpiresAt = "imported by make bench", "2030-01-01T00:00:00Z"
	}
	if i%100 == 0 {
		it.RevokedAt = created.Add(time.Hour).Format(time.RFC3339)
	}
	return it
}
