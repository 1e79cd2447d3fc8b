package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// ListLinks implements LinkLister on the indexes of
// migrations/006_link_list.up.sql and 010_link_tags.up.sql:
//
//   - created / -created walk the (created_at, code) index from the cursor
//     (status=revoked walks the partial index of revoked links), filtering
//     as they go; with a tag they walk the tag's own creation order
//     (shortener_link_tags, kept by a trigger) joined to its links;
//   - q is ILIKE '%q%' (with % _ \ escaped) over the code, long URL and
//     title; sorted by creation it is a bounded walk, then the trigram
//     index (postgres_search.go);
//   - clicks / -clicks walk the totals in order, then the links never
//     clicked by code (postgres_list_clicks.go); with q they sort every
//     match by its total (a link without a row in
//     shortener_link_click_totals has 0), tag as tags @> {tag} on the GIN
//     index.
func (s *PostgresStore) ListLinks(ctx context.Context, q link.ListQuery) (link.ListPage, error) {
	q = q.Normalized()
	cur, err := link.DecodeCursor(q.Sort, q.Cursor)
	if err != nil {
		return link.ListPage{}, err
	}
	switch {
	case q.Q != "" && !q.ByClicks():
		return s.searchLinks(ctx, q, cur)
	case q.Q == "" && q.ByClicks():
		return s.listByClicks(ctx, q, cur)
	}
	st, err := newListStmt(q, cur)
	if err != nil {
		return link.ListPage{}, err
	}
	if q.Q != "" {
		st.where = append(st.where, st.matchQ("l", q.Q))
	}
	links, err := s.queryLinks(ctx, st.page(q.Limit+1), st.args)
	if err != nil {
		return link.ListPage{}, err
	}
	return pageOf(q, links), nil
}

// queryLinks runs a statement selecting listedColumns.
func (s *PostgresStore) queryLinks(ctx context.Context, sql string, args []any) ([]link.ListedLink, error) {
	rows, err := s.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	links, err := pgx.CollectRows(rows, scanListedLink)
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	return links, nil
}

// listStmt is one listing's statement under construction: its arguments,
// the rows it reads and their conditions, and its order.
type listStmt struct {
	args  []any
	where []string
	from  string // the FROM items before join
	join  string // the click totals' join (clickTotals), "" when from has them
	// key and code are the sort key's columns (key "": by code alone); dir
	// is ASC or DESC and op the keyset comparison that continues in that
	// direction.
	key, code, dir, op string
}

// newListStmt builds the statement of q's status, tag, order and cursor;
// q's search is left to the caller.
func newListStmt(q link.ListQuery, cur *link.Cursor) (*listStmt, error) {
	st := &listStmt{from: "shortener_links l", join: clickTotals, key: "l.created_at", code: "l.code", dir: "ASC", op: ">"}
	if q.Descending() {
		st.dir, st.op = "DESC", "<"
	}
	cond, err := st.status(q)
	if err != nil {
		return nil, err
	}
	if cond != "" {
		st.where = append(st.where, cond)
	}
	st.where = append(st.where, st.inDomain(q.Domain))
	switch {
	case q.ByClicks():
		st.key = "COALESCE(t.people + t.bots + t.imported, 0)"
		if q.Tag != "" {
			st.where = append(st.where, st.hasTag(q.Tag))
		}
	case q.Tag != "":
		st.from = "shortener_link_tags g JOIN shortener_links l ON l.code = g.code"
		st.key, st.code = "g.created_at", "g.code"
		st.where = append(st.where, "g.tag = "+st.arg(q.Tag))
	}
	if cur != nil {
		var k any = cur.Key
		if !q.ByClicks() {
			k = time.UnixMicro(cur.Key).UTC()
		}
		st.where = append(st.where, st.after(k, cur.Code))
	}
	return st, nil
}

// inDomain is the condition of the link domain host on the link l: its
// key starts with host and the separator, or ("" for the default domain)
// holds no separator. starts_with, never LIKE: a host may hold '_'.
func (st *listStmt) inDomain(host string) string {
	if host == "" {
		return "strpos(l.code, '/') = 0"
	}
	return "starts_with(l.code, " + st.arg(link.DomainKey(host, "")) + ")"
}

// arg adds an argument and returns its placeholder.
func (st *listStmt) arg(v any) string {
	st.args = append(st.args, v)
	return "$" + strconv.Itoa(len(st.args))
}

// status is the condition of q's status on the link l ("" for all).
func (st *listStmt) status(q link.ListQuery) (string, error) {
	live := func() string {
		return "l.revoked_at IS NULL AND (l.expires_at IS NULL OR l.expires_at > " + st.arg(q.Now) + ")"
	}
	const spent = "l.max_clicks > 0 AND l.clicks_served >= l.max_clicks"
	switch q.Status {
	case link.StatusActive:
		return live() + " AND NOT (" + spent + ") AND (l.valid_from IS NULL OR l.valid_from <= " + st.arg(q.Now) + ")", nil
	case link.StatusExpired:
		return "l.revoked_at IS NULL AND l.expires_at <= " + st.arg(q.Now), nil
	case link.StatusRevoked:
		return "l.revoked_at IS NOT NULL", nil
	case link.StatusExhausted:
		return live() + " AND " + spent, nil
	case link.StatusScheduled:
		return live() + " AND NOT (" + spent + ") AND l.valid_from > " + st.arg(q.Now), nil
	case link.StatusAll:
		return "", nil
	}
	return "", fmt.Errorf("listing links: unknown status %q", q.Status)
}

// after is the keyset condition: rows after (key, code) in the order.
func (st *listStmt) after(key any, code string) string {
	if st.key == "" {
		return st.code + " " + st.op + " " + st.arg(code)
	}
	return "(" + st.key + ", " + st.code + ") " + st.op + " (" + st.arg(key) + ", " + st.arg(code) + ")"
}

// hasTag is the condition of the link l carrying tag, on the GIN index.
func (st *listStmt) hasTag(tag string) string {
	return "l.tags @> ARRAY[" + st.arg(tag) + "::text]"
}

// matchQ is the search condition on the link (or link-shaped row) alias:
// its code, long URL or title contains s, case-insensitively.
func (st *listStmt) matchQ(alias, s string) string {
	return st.likeQ(alias, "%"+escapeLike(s)+"%")
}

// conditions joins where into a WHERE clause ("" when empty).
func conditions(where []string) string {
	if len(where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(where, " AND ")
}

// order is the ORDER BY of the statement's sort key, ties by code.
func (st *listStmt) order() string {
	if st.key == "" {
		return " ORDER BY " + st.code + " " + st.dir
	}
	return " ORDER BY " + st.key + " " + st.dir + ", " + st.code + " " + st.dir
}

// listedColumns are the columns scanListedLink reads, from the link l and
// its click totals t.
const listedColumns = `l.code, l.long_url, l.created_at, l.expires_at, l.revoked_at, l.title, l.tags, l.notes,
	l.redirect_status, l.valid_from, l.max_clicks, l.forward_query, l.clicks_served, l.version,
	l.targeting, l.fallback_url, COALESCE(t.people + t.bots + t.imported, 0)`

// clickTotals joins a link l to its click totals t.
const clickTotals = ` LEFT JOIN shortener_link_click_totals t ON t.code = (l.code COLLATE "default")`

// page is the statement of the first n links in order: a page of limit+1
// rows, the last one only telling that there is a next page.
func (st *listStmt) page(n int) string {
	return "SELECT " + listedColumns + " FROM " + st.from + st.join + conditions(st.where) + st.order() +
		" LIMIT " + st.arg(n)
}

// escapeLike quotes the LIKE wildcards % and _ and the escape character \.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func scanListedLink(row pgx.CollectableRow) (link.ListedLink, error) {
	var l link.ListedLink
	var expires, revoked, validFrom *time.Time
	var status int16
	var targeting *string
	err := row.Scan(&l.Code, &l.LongURL, &l.CreatedAt, &expires, &revoked, &l.Title, &l.Tags, &l.Notes,
		&status, &validFrom, &l.MaxClicks, &l.ForwardQuery, &l.ClicksServed, &l.Version,
		&targeting, &l.FallbackURL, &l.Clicks)
	l.Targeting = targetingBytes(targeting)
	l.CreatedAt = l.CreatedAt.UTC()
	l.ExpiresAt, l.RevokedAt, l.ValidFrom = utcOrZero(expires), utcOrZero(revoked), utcOrZero(validFrom)
	l.RedirectStatus = int(status)
	l.Tags = link.TagsOrNil(l.Tags)
	return l, err
}

// pageOf cuts the limit+1 links read for q into a page and its cursor.
func pageOf(q link.ListQuery, links []link.ListedLink) link.ListPage {
	if links == nil {
		links = []link.ListedLink{}
	}
	if len(links) <= q.Limit {
		return link.ListPage{Links: links}
	}
	links = links[:q.Limit]
	return link.ListPage{Links: links, NextCursor: link.EncodeCursor(q.Sort, links[len(links)-1])}
}

var _ link.LinkLister = (*PostgresStore)(nil)
