// Command links measures listing, search and export of short links in
// PostgreSQL at scale (make bench runs it; see docs/performance.md):
//
//	go run ./bench/links -dsn postgres://postgres@127.0.0.1:5432/test [-links 1000000]
//
// It fills a fresh schema (dropped at the end) by COPY with realistic
// links, first 100,000 then up to -links, and at each size measures the
// store's list pages (50 links, default order, and with a tag), q search
// (a stated mix of selective and broad terms) and the export through the
// handler (rate and the process's peak RSS).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgekit/caddy-edgekit/shortener/store"
)

func main() {
	dsn := flag.String("dsn", os.Getenv("TEST_DATABASE_URL"), "PostgreSQL URL (a database the program may create a schema in)")
	total := flag.Int("links", 1_000_000, "links at the last size")
	samples := flag.Int("samples", 200, "timed queries per measure")
	keep := flag.Bool("keep", false, "keep the filled schema (its name is printed) to study plans by hand")
	reuse := flag.String("reuse", "", "measure a schema kept by -keep (filled with -links links) instead of filling one")
	flag.Parse()
	if *dsn == "" {
		log.Fatal("no -dsn and no TEST_DATABASE_URL")
	}
	ctx := context.Background()
	schema := fmt.Sprintf("edgekit_bench_links_%d", time.Now().UnixNano()%1e9)
	admin, err := pgx.Connect(ctx, *dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer admin.Close(ctx)
	_, _ = admin.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
	if *reuse != "" {
		schema = *reuse
	} else if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		log.Fatal(err)
	}
	if *keep || *reuse != "" {
		fmt.Printf("schema %s is kept: DROP SCHEMA %s CASCADE when done\n", schema, schema)
	} else {
		defer admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") //nolint:errcheck
	}
	sdsn := withSearchPath(*dsn, schema)
	pool, err := pgxpool.New(ctx, sdsn)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := store.OpenPostgres(ctx, pool)
	if err != nil {
		log.Fatal(err)
	}
	ex, err := newExporter(sdsn)
	if err != nil {
		log.Fatal(err)
	}
	defer ex.close()
	filled := 0
	sizes := []int{100_000, *total}
	if *reuse != "" {
		fmt.Printf("## %d links (schema %s as filled before)\n", *total, schema)
		measureQueries(ctx, store, *samples)
		sizes = nil
	}
	for _, size := range sizes {
		if size <= filled {
			continue
		}
		start := time.Now()
		if err := fill(ctx, pool, filled, size); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("## %d links (filled %d by COPY in %v, then VACUUM ANALYZE)\n", size, size-filled, time.Since(start).Round(time.Second))
		filled = size
		measureQueries(ctx, store, *samples)
		n, took, rss, err := ex.run()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("export ndjson: %d links in %v = %.0f links/s, peak RSS during export %.1f MiB\n",
			n, took.Round(time.Millisecond), float64(n)/took.Seconds(), float64(rss)/(1<<20))
	}
	explain(ctx, pool)
}

// withSearchPath adds search_path to a URL DSN.
func withSearchPath(dsn, schema string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}
