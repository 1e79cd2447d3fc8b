package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// searchWalks are how many links (of the page's status and tag) a search
// page examines in order, in two steps, before it turns to the trigram
// index: a first look that tells rare terms from common ones, then the
// rest of the walk for terms that were seen. A term on 1 link in 100
// fills a page of 50 within the 5,000.
var searchWalks = []int{500, 4500}

// searchLinks answers a page of q sorted by creation, from the cursor from
// (nil: the top). Its cost is bounded
// by the page, not by the collection:
//
//  1. walk the next 500 links in order from the cursor, keeping those that
//     match (the whole page, for common terms);
//  2. if the page is not full and the walk did not reach the end, read
//     where it stopped; if the term was seen, walk 4,500 more from there;
//  3. if the page is still not full, collect the remaining matches after
//     the walk from the trigram index and sort them: few, since the term
//     is rare in the walk.
//
// A term rare among the newest links but frequent among older ones costs
// the sort of those older matches (docs/performance.md).
func (s *PostgresStore) searchLinks(ctx context.Context, q link.ListQuery, from *link.Cursor) (link.ListPage, error) {
	var links []link.ListedLink
	for _, walk := range s.walks() {
		found, err := s.walkSearch(ctx, q, from, walk, q.Limit+1-len(links))
		links = append(links, found...)
		if err != nil || len(links) > q.Limit {
			return pageOf(q, links), err
		}
		if from, err = s.walkEnd(ctx, q, from, walk); err != nil || from == nil {
			return pageOf(q, links), err
		}
		if len(found) == 0 {
			break // rare here: the index finds the rest faster than a walk
		}
	}
	rest, err := s.searchIndexed(ctx, q, from, q.Limit+1-len(links))
	return pageOf(q, append(links, rest...)), err
}

// walks are the steps of the walk in force: searchWalks, or the test's.
func (s *PostgresStore) walks() []int {
	if s.SearchWalk > 0 {
		return []int{s.SearchWalk, s.SearchWalk}
	}
	return searchWalks
}

// walkSearch returns the first n links matching q among the next walk
// links after from (nil: the top) in order.
func (s *PostgresStore) walkSearch(ctx context.Context, q link.ListQuery, from *link.Cursor, walk, n int) ([]link.ListedLink, error) {
	st, err := newListStmt(q, from)
	if err != nil {
		return nil, err
	}
	walked := "SELECT " + linkRow + ", " + st.key + " AS sort_key FROM " + st.from + conditions(st.where) + st.order() +
		" LIMIT " + st.arg(walk)
	return s.queryLinks(ctx, "SELECT "+listedColumns+" FROM ("+walked+") l"+clickTotals+" WHERE "+st.containsQ("l", q.Q)+
		" ORDER BY l.sort_key "+st.dir+", l.code "+st.dir+" LIMIT "+st.arg(n), st.args)
}

// containsQ is matchQ for a scan: lower(text) LIKE lower(pattern), which
// is how PostgreSQL computes ILIKE in a multibyte database (the same
// result), with the pattern lowered once instead of at every row: half
// the CPU per link examined. The trigram index serves ILIKE only.
func (st *listStmt) containsQ(alias, s string) string {
	return `lower(shortener_link_search_text(` + alias + `.code, ` + alias + `.long_url, ` + alias + `.title) COLLATE "default") LIKE (SELECT lower(` +
		st.arg("%"+escapeLike(s)+"%") + ` COLLATE "default"))`
}

// linkRow are the columns of a link that listedColumns reads.
const linkRow = `l.code, l.long_url, l.created_at, l.expires_at, l.revoked_at, l.title, l.tags, l.notes,
	l.redirect_status, l.valid_from, l.max_clicks, l.forward_query, l.clicks_served, l.version,
	l.targeting, l.fallback_url`

// walkEnd returns the sort key of the last of the next walk links after
// from, nil when fewer are left.
func (s *PostgresStore) walkEnd(ctx context.Context, q link.ListQuery, from *link.Cursor, walk int) (*link.Cursor, error) {
	st, err := newListStmt(q, from)
	if err != nil {
		return nil, err
	}
	var at time.Time
	var code string
	err = s.Pool.QueryRow(ctx, "SELECT "+st.key+", "+st.code+" FROM "+st.from+conditions(st.where)+st.order()+
		" OFFSET "+st.arg(walk-1)+" LIMIT 1", st.args...).Scan(&at, &code)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	return &link.Cursor{Sort: q.Sort, Key: at.UnixMicro(), Code: code}, nil
}

// searchIndexed returns the first n links of q after from in order,
// collected from the trigram (and tag) index whatever their order, then
// sorted.
func (s *PostgresStore) searchIndexed(ctx context.Context, q link.ListQuery, from *link.Cursor, n int) ([]link.ListedLink, error) {
	tag := q.Tag
	q.Tag = "" // the tag by its GIN index: the walk in its order is done
	st, err := newListStmt(q, from)
	if err != nil {
		return nil, err
	}
	if tag != "" {
		st.where = append(st.where, st.hasTag(tag))
	}
	if loose, ok := looseLike(q.Q); ok {
		st.where = append(st.where, st.likeQ("l", loose), st.containsQ("l", q.Q))
	} else {
		st.where = append(st.where, st.matchQ("l", q.Q))
	}
	matches := "SELECT " + linkRow + " FROM shortener_links l" + conditions(st.where)
	order := " ORDER BY l.created_at " + st.dir + ", l.code " + st.dir
	return s.queryLinks(ctx, "WITH m AS MATERIALIZED ("+matches+") SELECT "+listedColumns+
		" FROM (SELECT * FROM m l"+order+" LIMIT "+st.arg(n)+") l"+clickTotals+order, st.args)
}

// looseLike returns the ILIKE pattern the trigram index is asked with for
// the search s: its runs of letters and digits in order, anything between
// (%), so ok only when one run has three characters or more. Its matches
// include those of s, which the statement then checks exactly, and its
// trigrams are those of s without the ones pg_trgm pads at word
// boundaries ("  1", " 12", "le "): the most common trigrams, whose long
// posting lists cost most of a scan (on 1,000,000 links, a path's
// word-number like sale-12345 read 300 index pages in 12-25 ms; loosened,
// 66-163 pages in 3-8 ms).
func looseLike(s string) (pattern string, ok bool) {
	var b strings.Builder
	b.WriteByte('%')
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c >= 0x80 {
			b.WriteByte(c)
			run++
			ok = ok || run >= 3
			continue
		}
		if run > 0 {
			b.WriteByte('%')
		}
		run = 0
	}
	if run > 0 {
		b.WriteByte('%')
	}
	return b.String(), ok
}

// likeQ is the condition of the link's searched text matching the ILIKE
// pattern (served by the trigram index).
func (st *listStmt) likeQ(alias, pattern string) string {
	return `shortener_link_search_text(` + alias + `.code, ` + alias + `.long_url, ` + alias + `.title) COLLATE "default" ILIKE ` +
		st.arg(pattern)
}
