package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The data: links created over two years (several a second at the end),
// 2% revoked, 3% expired; long URLs on 40 shop and news domains with a
// path of two words and a number and a campaign query; titles of three
// words and a number; 0-3 tags, "newsletter" on a fifth of the links and
// the other 59 tags rarer (tag i on about 1 link in 10*(i+1)); 30% of the
// links have click totals.
var (
	words = strings.Fields(`sale summer winter spring autumn offer shoes jacket coffee garden kitchen laptop phone
		camera travel hotel flight beach mountain city guide review recipe pasta pizza salad burger vegan fitness yoga
		running cycling football tennis music concert festival ticket movie series book novel poetry history science
		space rocket planet ocean river forest desert island bridge castle museum gallery painting photo design fashion
		watch ring necklace perfume makeup skincare hair barber tattoo wedding party birthday gift toy puzzle game
		console keyboard mouse monitor printer router cable charger battery solar wind energy climate weather storm
		snow rain sun moon star galaxy robot drone sensor chip code cloud server database network security privacy
		bank loan credit mortgage tax invoice budget salary career job resume interview startup funding pitch market`)
	domains []string
	tags    []string
)

func init() {
	for i, d := range strings.Fields(`shop news store blog mag daily market deals travel food tech sport style home
		health money auto kids pets garden music film books games art science world local city studio lab hub
		club zone point base spot place line net web`) {
		domains = append(domains, fmt.Sprintf("%s-%d.example.com", d, i))
	}
	tags = append(tags, "newsletter")
	for i := 1; i < 60; i++ {
		tags = append(tags, fmt.Sprintf("%s:%d", words[i*3%len(words)], i))
	}
}

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// code is link i's code: 7 characters, a bijection of i (1000003 is prime
// to 62^7), so codes never collide and look random.
func code(i int) string {
	n := uint64(i) * 1000003 % 3521614606208 // 62^7
	b := make([]byte, 7)
	for j := 6; j >= 0; j-- {
		b[j] = alphabet[n%62]
		n /= 62
	}
	return string(b)
}

type row struct {
	code, url, title string
	created          time.Time
	expires, revoked any
	tags             []string
	clicks           int64
}

func makeRow(i, total int, now time.Time) row {
	r := rand.New(rand.NewPCG(uint64(i), 42))
	w := func() string { return words[r.IntN(len(words))] }
	created := now.Add(-2 * 365 * 24 * time.Hour).Add(time.Duration(float64(2*365*24*time.Hour) * float64(i) / float64(total)))
	created = created.Truncate(time.Second) // ties: several links a second
	x := row{
		code:    code(i),
		url:     fmt.Sprintf("https://%s/%s/%s-%d?utm_campaign=%s", domains[r.IntN(len(domains))], w(), w(), r.IntN(100000), w()),
		title:   fmt.Sprintf("%s %s %s %d", strings.ToUpper(w()[:1])+w(), w(), w(), r.IntN(1000)),
		created: created,
		tags:    []string{},
	}
	switch p := r.IntN(100); {
	case p < 2:
		x.revoked = created.Add(time.Hour)
	case p < 5:
		x.expires = created.Add(24 * time.Hour)
	case p < 10:
		x.expires = now.Add(365 * 24 * time.Hour)
	}
	if r.IntN(5) == 0 {
		x.tags = append(x.tags, tags[0])
	}
	for j := 1; j < len(tags) && len(x.tags) < 3; j++ {
		if r.IntN(10*(j+1)) == 0 {
			x.tags = append(x.tags, tags[j])
		}
	}
	if r.IntN(10) < 3 {
		x.clicks = int64(r.ExpFloat64() * 200)
	}
	return x
}

// fill adds links [from, to) of a collection of to links by COPY, their
// click totals too, then analyzes the tables.
func fill(ctx context.Context, pool *pgxpool.Pool, from, to int) error {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	i := from
	var clicks [][]any
	n, err := pool.CopyFrom(ctx, pgx.Identifier{"shortener_links"},
		[]string{"code", "long_url", "created_at", "expires_at", "revoked_at", "title", "tags"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i >= to {
				return nil, nil
			}
			x := makeRow(i, to, now)
			i++
			if x.clicks > 0 {
				clicks = append(clicks, []any{x.code, x.clicks, int64(0)})
			}
			return []any{x.code, x.url, x.created, x.expires, x.revoked, x.title, x.tags}, nil
		}))
	if err != nil {
		return fmt.Errorf("copying links: %w", err)
	}
	if int(n) != to-from {
		return fmt.Errorf("copied %d links, want %d", n, to-from)
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"shortener_link_click_totals"}, []string{"code", "people", "bots"},
		pgx.CopyFromRows(clicks)); err != nil {
		return fmt.Errorf("copying click totals: %w", err)
	}
	// VACUUM as autovacuum would after a bulk load: it also moves the GIN
	// indexes' pending lists (fastupdate) into the index proper, which
	// every query would otherwise scan whole.
	for _, table := range []string{"shortener_links", "shortener_link_tags", "shortener_link_click_totals"} {
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+table); err != nil {
			return err
		}
	}
	return nil
}
