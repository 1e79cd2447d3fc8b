package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// embeddedCreated is the creation order of links: created_at in Unix
// microseconds (8 bytes big-endian, sign bit flipped so that byte order is
// time order) + code → empty. Create writes it in the transaction that
// stores the link; a file from before it is indexed when opened.
var embeddedCreated = []byte("by_created")

// createdKey is a link's key in embeddedCreated.
func createdKey(micros int64, code string) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(code)), uint64(micros)^1<<63)
	return append(k, code...)
}

// ensureCreatedIndex creates embeddedCreated and fills it from the links
// when the file has none.
func ensureCreatedIndex(tx *bolt.Tx) error {
	if tx.Bucket(embeddedCreated) != nil {
		return nil
	}
	idx, err := tx.CreateBucket(embeddedCreated)
	if err != nil {
		return err
	}
	return tx.Bucket(EmbeddedLinks).ForEach(func(k, v []byte) error {
		var rec embeddedRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("link %q: %w", k, err)
		}
		return idx.Put(createdKey(rec.CreatedAt, string(k)), nil)
	})
}

// ListLinks implements LinkLister in one read transaction.
//
// created / -created walk the creation index from the cursor and keep the
// links that match, so a page costs the links passed over to fill it.
// q is a scan: each link on the way is decoded and its code, long URL
// and title searched case-insensitively (strings.ToLower), as are tag and
// status. clicks / -clicks read every link and sort the matches by their
// total. The embedded store serves one instance and its listings are
// sized for that: for large collections with search, use PostgreSQL.
func (s *EmbeddedStore) ListLinks(ctx context.Context, q link.ListQuery) (link.ListPage, error) {
	q = q.Normalized()
	cur, err := link.DecodeCursor(q.Sort, q.Cursor)
	if err != nil {
		return link.ListPage{}, err
	}
	var links []link.ListedLink
	err = s.Db.View(func(tx *bolt.Tx) error {
		if q.ByClicks() {
			links, err = listByClicks(ctx, tx, q, cur)
		} else {
			links, err = listByCreated(ctx, tx, q, cur)
		}
		return err
	})
	if err != nil {
		return link.ListPage{}, fmt.Errorf("listing links: %w", err)
	}
	return pageOf(q, links), nil
}

// listByCreated walks the creation index from the cursor to limit+1
// matches.
func listByCreated(ctx context.Context, tx *bolt.Tx, q link.ListQuery, cur *link.Cursor) ([]link.ListedLink, error) {
	c := tx.Bucket(embeddedCreated).Cursor()
	next, k := c.Next, []byte(nil)
	if q.Descending() {
		next = c.Prev
	}
	switch {
	case cur == nil && q.Descending():
		k, _ = c.Last()
	case cur == nil:
		k, _ = c.First()
	default:
		after := createdKey(cur.Key, cur.Code)
		k, _ = c.Seek(after)
		if q.Descending() && k == nil {
			k, _ = c.Last()
		}
		for k != nil && (bytes.Equal(k, after) || (bytes.Compare(k, after) > 0) != !q.Descending()) {
			k, _ = next()
		}
	}
	links := tx.Bucket(EmbeddedLinks)
	totals := listTotalsOf(tx)
	m := NewLinkMatcher(q)
	var out []link.ListedLink
	for n := 0; k != nil && len(out) <= q.Limit; k, _ = next() {
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		code := string(k[8:])
		l, ok, err := readListed(links, totals, code)
		if err != nil {
			return nil, err
		}
		if ok && m.Match(l.Link) {
			out = append(out, l)
		}
	}
	return out, nil
}

// listByClicks reads every link, keeps the matches past the cursor and
// returns the first limit+1 by click total and code.
func listByClicks(ctx context.Context, tx *bolt.Tx, q link.ListQuery, cur *link.Cursor) ([]link.ListedLink, error) {
	totals := listTotalsOf(tx)
	m := NewLinkMatcher(q)
	order := func(a, b link.ListedLink) int {
		c := cmp.Or(cmp.Compare(a.Clicks, b.Clicks), strings.Compare(a.Code, b.Code))
		if q.Descending() {
			return -c
		}
		return c
	}
	var out []link.ListedLink
	n := 0
	err := tx.Bucket(EmbeddedLinks).ForEach(func(k, _ []byte) error {
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		l, ok, err := readListed(tx.Bucket(EmbeddedLinks), totals, string(k))
		if err != nil || !ok || !m.Match(l.Link) {
			return err
		}
		if cur != nil && order(l, link.ListedLink{Link: link.Link{Code: cur.Code}, Clicks: cur.Key}) <= 0 {
			return nil
		}
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, order)
	return out[:min(len(out), q.Limit+1)], nil
}

// listTotals are the buckets of the all-time click totals: counted and
// imported.
type listTotals struct{ counted, imported *bolt.Bucket }

func listTotalsOf(tx *bolt.Tx) listTotals {
	return listTotals{tx.Bucket(BucketClickTotals), tx.Bucket(embeddedBaselines)}
}

// readListed reads a link and its click total; false if it is missing.
func readListed(links *bolt.Bucket, totals listTotals, code string) (link.ListedLink, bool, error) {
	v := links.Get([]byte(code))
	if v == nil {
		return link.ListedLink{}, false, nil
	}
	var rec embeddedRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return link.ListedLink{}, false, fmt.Errorf("link %q: %w", code, err)
	}
	l := link.ListedLink{Link: rec.link(code)}
	if totals.counted != nil {
		if t := totals.counted.Get([]byte(code)); len(t) == 16 {
			l.Clicks = int64(binary.BigEndian.Uint64(t[:8]) + binary.BigEndian.Uint64(t[8:]))
		}
	}
	l.Clicks += readBaseline(totals.imported, code)
	return l, true, nil
}

// linkMatcher judges a link against the filters of a query.
type linkMatcher struct {
	q link.ListQuery
	// lower is q.Q in lower case.
	lower string
}

func NewLinkMatcher(q link.ListQuery) linkMatcher {
	return linkMatcher{q: q, lower: strings.ToLower(q.Q)}
}

func (m linkMatcher) Match(l link.Link) bool {
	if host, _ := link.SplitDomainKey(l.Code); host != m.q.Domain {
		return false
	}
	if m.q.Status != link.StatusAll && link.Status(l, m.q.Now) != m.q.Status {
		return false
	}
	if m.q.Tag != "" && !slices.Contains(l.Tags, m.q.Tag) {
		return false
	}
	if m.lower == "" {
		return true
	}
	for _, f := range [...]string{l.Code, l.LongURL, l.Title} {
		if strings.Contains(strings.ToLower(f), m.lower) {
			return true
		}
	}
	return false
}

var _ link.LinkLister = (*EmbeddedStore)(nil)
