package main

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// explain prints the plans of the default listing, a tag and a q search,
// to show which index serves each.
func explain(ctx context.Context, pool *pgxpool.Pool) {
	for _, c := range []struct{ name, where string }{
		{"default list", ""},
		{"tag=newsletter", `AND l.tags @> ARRAY['newsletter'::text]`},
		{"tag rare", `AND l.tags @> ARRAY['` + tags[40] + `'::text]`},
		{"q selective", `AND shortener_link_search_text(l.code, l.long_url, l.title) COLLATE "default" ILIKE '%` + code(4242) + `%'`},
		{"q broad", `AND shortener_link_search_text(l.code, l.long_url, l.title) COLLATE "default" ILIKE '%https%'`},
	} {
		rows, err := pool.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) SELECT l.code, COALESCE(t.people + t.bots, 0)
			FROM shortener_links l LEFT JOIN shortener_link_click_totals t ON t.code = (l.code COLLATE "default")
			WHERE l.revoked_at IS NULL AND (l.expires_at IS NULL OR l.expires_at > now()) `+c.where+`
			ORDER BY l.created_at DESC, l.code DESC LIMIT 51`)
		if err != nil {
			log.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				log.Fatal(err)
			}
			plan = append(plan, "    "+line)
		}
		fmt.Printf("EXPLAIN %s:\n%s\n", c.name, strings.Join(plan, "\n"))
	}
}
