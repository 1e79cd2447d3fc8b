package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// ClickBreakdown implements Sink: one cursor over the days in
// [first, end) of the link's referrer or dimension bucket, or across
// links of BucketDayDims (keys of code "", by day first). A link's
// breakdown by rule or variant adds each value's uniques.
func (s *EmbeddedClickSink) ClickBreakdown(ctx context.Context, code, dim string, from, to time.Time, limit int) ([]clicks.BreakdownEntry, error) {
	first, end := clicks.DayRange(from, to)
	bucket, sub := bucketClicksDims, []byte(dim+"\x00")
	switch {
	case code == "":
		bucket = BucketDayDims
	case dim == clicks.DimReferrer:
		bucket, sub = bucketClicksReferrers, nil
	}
	prefix := append([]byte(code), 0)
	sums := map[string]int64{}
	var out []clicks.BreakdownEntry
	err := s.Db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, v := c.Seek(clickKey(code, first.Unix(), "")); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if int64(binary.BigEndian.Uint64(k[len(prefix):len(prefix)+8])) >= end.Unix() {
				break
			}
			if rest := k[len(prefix)+8:]; bytes.HasPrefix(rest, sub) && len(v) == 8 {
				sums[string(rest[len(sub):])] += int64(binary.BigEndian.Uint64(v))
			}
		}
		out = clicks.TopEntries(sums, limit)
		if code != "" && clicks.HasUniques(dim) {
			dimUniquesBolt(tx, code, dim, first, end, out)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("click breakdown: %w", err)
	}
	return out, nil
}

// Overview implements Sink: one cursor over the days in
// [first, end) of BucketDayLinks.
func (s *EmbeddedClickSink) ClickOverview(ctx context.Context, from, to time.Time, limit int) (clicks.Overview, error) {
	first, end := clicks.DayRange(from, to)
	o := clicks.Overview{From: first, To: end}
	links := map[string]int64{}
	err := s.Db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(BucketDayLinks).Cursor()
		for k, v := c.Seek(clickKey("", first.Unix(), "")); len(k) >= 9 && k[0] == 0; k, v = c.Next() {
			if int64(binary.BigEndian.Uint64(k[1:9])) >= end.Unix() {
				break
			}
			if len(v) == 16 {
				p, b := int64(binary.BigEndian.Uint64(v[:8])), int64(binary.BigEndian.Uint64(v[8:]))
				o.People, o.Bots = o.People+p, o.Bots+b
				links[string(k[9:])] += p + b
			}
		}
		return nil
	})
	if err != nil {
		return o, fmt.Errorf("click overview: %w", err)
	}
	o.Total = o.People + o.Bots
	o.Links = clicks.LinksOf(clicks.TopEntries(links, limit))
	return o, nil
}
