package store

import (
	"context"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// listByClicks answers a page sorted by click total without a q search
// (with q, ListLinks sorts the matches), in up to two statements on
// the indexes of migrations/011_click_totals_order.up.sql: the clicked
// links by their total, then the links never clicked (total 0) by code.
// Descending, the clicked links come first; ascending, last. Each
// statement reads about as many rows as the page holds, plus those its
// status and tag filter out.
func (s *PostgresStore) listByClicks(ctx context.Context, q link.ListQuery, cur *link.Cursor) (link.ListPage, error) {
	clickedFirst := q.Descending()
	var links []link.ListedLink
	for _, clicked := range []bool{clickedFirst, !clickedFirst} {
		if cur != nil && (cur.Key > 0) != clicked {
			continue // the cursor is past this part
		}
		st, err := newClicksStmt(q, clicked, cur)
		if err != nil {
			return link.ListPage{}, err
		}
		found, err := s.queryLinks(ctx, st.page(q.Limit+1-len(links)), st.args)
		links = append(links, found...)
		if err != nil || len(links) > q.Limit {
			return pageOf(q, links), err
		}
		cur = nil // the next part starts at its top
	}
	return pageOf(q, links), nil
}

// newClicksStmt builds the statement of one part of a listing by clicks:
// the clicked links (total > 0) from their totals, or the others from the
// links, after cur when the cursor is in this part.
func newClicksStmt(q link.ListQuery, clicked bool, cur *link.Cursor) (*listStmt, error) {
	tag := q.Tag
	q.Tag = "" // on the GIN index, not in the tag's creation order
	st, err := newListStmt(q, nil)
	if err != nil {
		return nil, err
	}
	if tag != "" {
		st.where = append(st.where, st.hasTag(tag))
	}
	if clicked {
		st.from = `shortener_link_click_totals t JOIN shortener_links l ON l.code = (t.code COLLATE "C")`
		st.join = ""
		st.key, st.code = "(t.people + t.bots + t.imported)", `(t.code COLLATE "C")`
		st.where = append(st.where, "(t.people + t.bots + t.imported) > 0")
	} else {
		st.key = "" // all 0: by code alone
		st.where = append(st.where, "COALESCE(t.people + t.bots + t.imported, 0) = 0")
	}
	if cur != nil {
		st.where = append(st.where, st.after(cur.Key, cur.Code))
	}
	return st, nil
}
