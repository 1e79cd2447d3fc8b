package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// measureQueries times ListLinks (the store's answer to GET <api>/links,
// status=active, sort=-created, 50 a page) and prints p50 and p99 per
// kind of query.
func measureQueries(ctx context.Context, s *store.PostgresStore, samples int) {
	r := rand.New(rand.NewPCG(7, 7))
	page := func(q link.ListQuery) (link.ListPage, time.Duration) {
		q.Limit = 50
		start := time.Now()
		p, err := s.ListLinks(ctx, q)
		if err != nil {
			log.Fatalf("ListLinks(%+v): %v", q, err)
		}
		return p, time.Since(start)
	}
	report := func(name string, next func(i int) link.ListQuery) {
		var ds []time.Duration
		found := 0
		for i := range samples {
			p, d := page(next(i))
			ds = append(ds, d)
			found += len(p.Links)
		}
		slices.Sort(ds)
		fmt.Printf("| %s | %d | %.2f | %.2f | %.1f |\n", name, samples,
			ms(ds[len(ds)/2]), ms(ds[len(ds)*99/100]), float64(found)/float64(samples))
	}
	fmt.Println("| query (50 a page, status=active, sort=-created) | samples | p50 ms | p99 ms | links a page |")
	fmt.Println("|---|---:|---:|---:|---:|")
	cursor := ""
	report("list, pages 1..n of one walk", func(int) link.ListQuery {
		q := link.ListQuery{Cursor: cursor}
		p, _ := page(q) // the cursor of the next page; this read is not timed twice
		cursor = p.NextCursor
		return q
	})
	cursor = ""
	report("list sort=-clicks, pages 1..n of one walk", func(int) link.ListQuery {
		q := link.ListQuery{Sort: link.SortClicksDesc, Cursor: cursor}
		p, _ := page(q)
		cursor = p.NextCursor
		return q
	})
	report("list, tag=newsletter (1 link in 5)", func(int) link.ListQuery { return link.ListQuery{Tag: "newsletter"} })
	report("list, rare tags (1 in 100 to 1 in 600)", func(i int) link.ListQuery {
		return link.ListQuery{Tag: tags[10+r.IntN(50)]}
	})
	report("q selective: a link's code (1 match)", func(i int) link.ListQuery {
		return link.ListQuery{Q: code(r.IntN(100_000))}
	})
	report("q selective: word-number of a path (~1-10 matches)", func(i int) link.ListQuery {
		return link.ListQuery{Q: fmt.Sprintf("%s-%d", words[r.IntN(len(words))], 10000+r.IntN(90000))}
	})
	report("q broad: one word (~1-3% of links)", func(i int) link.ListQuery {
		return link.ListQuery{Q: words[r.IntN(len(words))]}
	})
	report("q broad: a domain (2.5%)", func(i int) link.ListQuery {
		return link.ListQuery{Q: domains[r.IntN(len(domains))]}
	})
	report("q broad: https (every link)", func(int) link.ListQuery { return link.ListQuery{Q: "https"} })
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
