package shortener

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ListLinks implements LinkLister with one statement per page, on the
// indexes of migrations/006_link_list.up.sql:
//
//   - created / -created walk the (created_at, code) index from the cursor
//     (status=revoked walks the partial index of revoked links), filtering
//     as they go, or, when the planner expects few matches, collect the
//     matches of q or tag from their GIN index and sort them;
//   - q is ILIKE '%q%' (with % _ \ escaped) over the code, long URL and
//     title, served by the trigram index;
//   - tag is tags @> {tag}, served by the GIN index on tags;
//   - clicks / -clicks sort every matching link by its total from
//     shortener_link_click_totals (a link without a row has 0): no index
//     serves that order, so its pages cost a sort of the matches.
func (s *PostgresStore) ListLinks(ctx context.Context, q ListQuery) (ListPage, error) {
	q = q.normalized()
	cur, err := decodeCursor(q.Sort, q.Cursor)
	if err != nil {
		return ListPage{}, err
	}
	sql, args, err := listSQL(q, cur)
	if err != nil {
		return ListPage{}, err
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return ListPage{}, fmt.Errorf("listing links: %w", err)
	}
	links, err := pgx.CollectRows(rows, scanListedLink)
	if err != nil {
		return ListPage{}, fmt.Errorf("listing links: %w", err)
	}
	return pageOf(q, links), nil
}

// listSQL builds the statement of one page: limit+1 rows, the last one
// only telling that there is a next page.
func listSQL(q ListQuery, cur *listCursor) (string, []any, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	live := func() string {
		return "l.revoked_at IS NULL AND (l.expires_at IS NULL OR l.expires_at > " + arg(q.Now) + ")"
	}
	const spent = "l.max_clicks > 0 AND l.clicks_served >= l.max_clicks"
	switch q.Status {
	case StatusActive:
		where = append(where, live()+" AND NOT ("+spent+") AND (l.valid_from IS NULL OR l.valid_from <= "+arg(q.Now)+")")
	case StatusExpired:
		where = append(where, "l.revoked_at IS NULL AND l.expires_at <= "+arg(q.Now))
	case StatusRevoked:
		where = append(where, "l.revoked_at IS NOT NULL")
	case StatusExhausted:
		where = append(where, live()+" AND "+spent)
	case StatusScheduled:
		where = append(where, live()+" AND NOT ("+spent+") AND l.valid_from > "+arg(q.Now))
	case StatusAll:
	default:
		return "", nil, fmt.Errorf("listing links: unknown status %q", q.Status)
	}
	if q.Q != "" {
		where = append(where, `shortener_link_search_text(l.code, l.long_url, l.title) COLLATE "default" ILIKE `+arg("%"+escapeLike(q.Q)+"%"))
	}
	if q.Tag != "" {
		where = append(where, "l.tags @> ARRAY["+arg(q.Tag)+"::text]")
	}
	key := "l.created_at"
	if q.byClicks() {
		key = "COALESCE(t.people + t.bots, 0)"
	}
	op, dir := ">", "ASC"
	if q.descending() {
		op, dir = "<", "DESC"
	}
	if cur != nil {
		var k any = cur.Key
		if !q.byClicks() {
			k = time.UnixMicro(cur.Key).UTC()
		}
		where = append(where, "("+key+", l.code) "+op+" ("+arg(k)+", "+arg(cur.Code)+")")
	}
	sql := `SELECT l.code, l.long_url, l.created_at, l.expires_at, l.revoked_at, l.title, l.tags, l.notes,
		l.redirect_status, l.valid_from, l.max_clicks, l.forward_query, l.clicks_served, l.version,
		COALESCE(t.people + t.bots, 0)
		FROM shortener_links l LEFT JOIN shortener_link_click_totals t ON t.code = (l.code COLLATE "default")`
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY " + key + " " + dir + ", l.code " + dir + " LIMIT " + arg(q.Limit+1)
	return sql, args, nil
}

// escapeLike quotes the LIKE wildcards % and _ and the escape character \.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func scanListedLink(row pgx.CollectableRow) (ListedLink, error) {
	var l ListedLink
	var expires, revoked, validFrom *time.Time
	var status int16
	err := row.Scan(&l.Code, &l.LongURL, &l.CreatedAt, &expires, &revoked, &l.Title, &l.Tags, &l.Notes,
		&status, &validFrom, &l.MaxClicks, &l.ForwardQuery, &l.ClicksServed, &l.Version, &l.Clicks)
	l.CreatedAt = l.CreatedAt.UTC()
	l.ExpiresAt, l.RevokedAt, l.ValidFrom = utcOrZero(expires), utcOrZero(revoked), utcOrZero(validFrom)
	l.RedirectStatus = int(status)
	l.Tags = tagsOrNil(l.Tags)
	return l, err
}

// pageOf cuts the limit+1 links read for q into a page and its cursor.
func pageOf(q ListQuery, links []ListedLink) ListPage {
	if links == nil {
		links = []ListedLink{}
	}
	if len(links) <= q.Limit {
		return ListPage{Links: links}
	}
	links = links[:q.Limit]
	return ListPage{Links: links, NextCursor: encodeCursor(q.Sort, links[len(links)-1])}
}

var _ LinkLister = (*PostgresStore)(nil)
