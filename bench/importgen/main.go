// Command importgen writes n links as an NDJSON import file (the
// export's format) for make bench's import step (scripts/bench_import.sh):
// codes, destinations, creation times and click totals on every line,
// titles and tags on a third, notes and expiries on a fifth, revocations
// on every hundredth. The same n gives the same file.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"time"
)

// record is one line: the fields of a link answer the import reads.
type record struct {
	Code      string     `json:"code"`
	LongURL   string     `json:"long_url"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	Title     *string    `json:"title,omitempty"`
	Tags      []string   `json:"tags,omitempty"`
	Notes     *string    `json:"notes,omitempty"`
	Clicks    int64      `json:"clicks"`
}

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
		if err := enc.Encode(link(i)); err != nil {
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

// link is the i-th record.
func link(i int) record {
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Second)
	r := record{
		Code:      fmt.Sprintf("im%07d", i),
		LongURL:   fmt.Sprintf("https://example.com/articles/%d/some-readable-slug?utm_source=bench&n=%d", i%50_000, i),
		CreatedAt: created,
		Clicks:    int64(i % 1_000),
	}
	if i%3 == 0 {
		title := fmt.Sprintf("Article %d: a title of ordinary length", i)
		r.Title, r.Tags = &title, []string{"bench", fmt.Sprintf("t%d", i%40)}
	}
	if i%5 == 0 {
		notes, exp := "imported by make bench", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		r.Notes, r.ExpiresAt = &notes, &exp
	}
	if i%100 == 0 {
		rev := created.Add(time.Hour)
		r.RevokedAt = &rev
	}
	return r
}
