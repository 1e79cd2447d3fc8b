package main

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// explain prints the plans of the statements the store runs for the
// default listing, a rare tag, a search that the walk in creation order
// answers and the trigram step of a rare term (shortener/postgres_list.go,
// postgres_search.go), to show which index serves each.
func explain(ctx context.Context, pool *pgxpool.Pool) {
	const live = `l.revoked_at IS NULL AND (l.expires_at IS NULL OR l.expires_at > now())`
	const text = `shortener_link_search_text(l.code, l.long_url, l.title) COLLATE "default"`
	const totals = ` LEFT JOIN shortener_link_click_totals t ON t.code = (l.code COLLATE "default")`
	const row = `l.code, l.long_url, l.title, l.created_at`
	for _, c := range []struct{ name, sql string }{
		{"default list", `SELECT l.code, COALESCE(t.people + t.bots, 0) FROM shortener_links l` + totals +
			` WHERE ` + live + ` ORDER BY l.created_at DESC, l.code DESC LIMIT 51`},
		{"tag rare", `SELECT l.code, COALESCE(t.people + t.bots, 0) FROM shortener_link_tags g JOIN shortener_links l ON l.code = g.code` +
			totals + ` WHERE ` + live + ` AND g.tag = '` + tags[40] + `' ORDER BY g.created_at DESC, g.code DESC LIMIT 51`},
		{"q walk (a domain)", `SELECT l.code, COALESCE(t.people + t.bots, 0) FROM (SELECT ` + row + `, l.created_at AS sort_key
			FROM shortener_links l WHERE ` + live + ` ORDER BY l.created_at DESC, l.code DESC LIMIT 5000) l` + totals +
			` WHERE lower(` + text + `) LIKE (SELECT lower('%` + domains[3] + `%' COLLATE "default")) ORDER BY l.sort_key DESC, l.code DESC LIMIT 51`},
		{"q trigram step (a path word)", `WITH m AS MATERIALIZED (SELECT ` + row + ` FROM shortener_links l WHERE ` + live +
			` AND ` + text + ` ILIKE '%` + words[7] + `%4242%' AND lower(` + text + `) LIKE (SELECT lower('%` + words[7] +
			`-4242%' COLLATE "default"))) SELECT l.code, COALESCE(t.people + t.bots, 0)
			FROM (SELECT * FROM m l ORDER BY l.created_at DESC, l.code DESC LIMIT 51) l` + totals + ` ORDER BY l.created_at DESC, l.code DESC`},
	} {
		rows, err := pool.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) `+c.sql)
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
