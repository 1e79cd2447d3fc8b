package shortener

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// defaultSearchWalk is how many links (of the page's status and tag, after its
// cursor) a search page examines in order before it turns to the trigram
// index: a term on 1 link in 100 fills a page of 50 within it.
const defaultSearchWalk = 5000

// searchLinks answers a page of q sorted by creation, in at most three
// statements whose cost is bounded by the page, not by the collection:
//
//  1. walk the next searchWalk links in order, keeping those that match
//     (the whole page, for any term that is not rare among them);
//  2. when the walk filled less than the page and did not reach the end,
//     read where it stopped (the walk's last link);
//  3. from there on, collect the remaining matches from the trigram index
//     and sort them: few, since the term was rare in the walk.
//
// A term rare among the newest links but frequent among older ones costs
// the sort of those older matches (docs/performance.md).
func (s *PostgresStore) searchLinks(ctx context.Context, q ListQuery, st *listStmt) (ListPage, error) {
	walked := st.walk(s.walkLimit())
	st.where = []string{st.containsQ("l", q.Q)}
	links, err := s.queryLinks(ctx, "SELECT "+listedColumns+" FROM ("+walked+") l"+clickTotals+conditions(st.where)+
		" ORDER BY l.sort_key "+st.dir+", l.code "+st.dir+" LIMIT "+st.arg(q.Limit+1), st.args)
	if err != nil || len(links) > q.Limit {
		return pageOf(q, links), err
	}
	stop, err := s.walkEnd(ctx, q)
	if err != nil || stop == nil {
		return pageOf(q, links), err
	}
	rest, err := s.searchIndexed(ctx, q, stop, q.Limit+1-len(links))
	return pageOf(q, append(links, rest...)), err
}

// containsQ is matchQ for a scan: lower(text) LIKE lower(pattern), which
// is what ILIKE does under the database's collation (its result is the
// same), with the pattern lowered once instead of at every row: half the
// CPU per link examined. The trigram index serves ILIKE only.
func (st *listStmt) containsQ(alias, s string) string {
	return `lower(shortener_link_search_text(` + alias + `.code, ` + alias + `.long_url, ` + alias + `.title) COLLATE "default") LIKE (SELECT lower(` +
		st.arg("%"+escapeLike(s)+"%") + ` COLLATE "default"))`
}

// walkLimit is the searchWalk in force.
func (s *PostgresStore) walkLimit() int {
	if s.searchWalk > 0 {
		return s.searchWalk
	}
	return defaultSearchWalk
}

// linkRow are the columns of a link that listedColumns reads.
const linkRow = `l.code, l.long_url, l.created_at, l.expires_at, l.revoked_at, l.title, l.tags, l.notes,
	l.redirect_status, l.valid_from, l.max_clicks, l.forward_query, l.clicks_served, l.version`

// walk is the statement of the first n links of the listing in order, as
// link rows with their sort key.
func (st *listStmt) walk(n int) string {
	return "SELECT " + linkRow + ", " + st.key + " AS sort_key FROM " + st.from + conditions(st.where) + st.order() +
		" LIMIT " + st.arg(n)
}

// walkEnd returns the sort key of the last link the walk of q examined,
// nil when the walk reached the end of the listing.
func (s *PostgresStore) walkEnd(ctx context.Context, q ListQuery) (*listCursor, error) {
	cur, err := decodeCursor(q.Sort, q.Cursor)
	if err != nil {
		return nil, err
	}
	st, err := newListStmt(q, cur)
	if err != nil {
		return nil, err
	}
	var at time.Time
	var code string
	err = s.pool.QueryRow(ctx, "SELECT "+st.key+", "+st.code+" FROM "+st.from+conditions(st.where)+st.order()+
		" OFFSET "+st.arg(s.walkLimit()-1)+" LIMIT 1", st.args...).Scan(&at, &code)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	return &listCursor{Sort: q.Sort, Key: at.UnixMicro(), Code: code}, nil
}

// searchIndexed returns the first n links of q after stop in order,
// collected from the trigram (and tag) index whatever their order, then
// sorted.
func (s *PostgresStore) searchIndexed(ctx context.Context, q ListQuery, stop *listCursor, n int) ([]ListedLink, error) {
	tag := q.Tag
	q.Tag, q.Cursor = "", "" // the tag by its GIN index: the walk in its order is done
	st, err := newListStmt(q, nil)
	if err != nil {
		return nil, err
	}
	if tag != "" {
		st.where = append(st.where, st.hasTag(tag))
	}
	st.where = append(st.where, st.matchQ("l", q.Q), st.after(time.UnixMicro(stop.Key).UTC(), stop.Code))
	matches := "SELECT " + linkRow + " FROM shortener_links l" + conditions(st.where)
	order := " ORDER BY l.created_at " + st.dir + ", l.code " + st.dir
	return s.queryLinks(ctx, "WITH m AS MATERIALIZED ("+matches+") SELECT "+listedColumns+
		" FROM (SELECT * FROM m l"+order+" LIMIT "+st.arg(n)+") l"+clickTotals+order, st.args)
}
