package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// ClickRows implements clicks.RowReader: a prefix scan of the hourly and
// daily buckets per code, daily rows as the 00:00 hour of the day.
func (s *EmbeddedClickSink) ClickRows(ctx context.Context, codes []string) (map[string][]link.HourlyClicks, error) {
	out := map[string][]link.HourlyClicks{}
	err := s.Db.View(func(tx *bbolt.Tx) error {
		for _, code := range codes {
			if err := ctx.Err(); err != nil {
				return err
			}
			prefix := clickKey(code, 0, "")[:len(code)+1]
			for _, b := range [][]byte{bucketClicksHourly, clicks.BucketClicksDaily} {
				c := tx.Bucket(b).Cursor()
				for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
					if len(k) != len(prefix)+8 || len(v) < 16 {
						continue
					}
					h := link.HourlyClicks{Hour: time.Unix(int64(binary.BigEndian.Uint64(k[len(prefix):])), 0).UTC(),
						People: int64(binary.BigEndian.Uint64(v[:8])), Bots: int64(binary.BigEndian.Uint64(v[8:16]))}
					if h.People+h.Bots > 0 {
						out[code] = append(out[code], h)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading click rollups: %w", err)
	}
	return mergeHours(out), nil
}

// SortedHours sorts rows by hour.
func sortedHours(rows []link.HourlyClicks) []link.HourlyClicks {
	slices.SortFunc(rows, func(a, b link.HourlyClicks) int { return a.Hour.Compare(b.Hour) })
	return rows
}

var _ clicks.RowReader = (*EmbeddedClickSink)(nil)
