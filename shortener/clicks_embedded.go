package shortener

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// Buckets of the embedded click counters.
var (
	bucketClicksHourly    = []byte("clicks_hourly")    // code 0 hour(8) → people(8) bots(8)
	bucketClicksReferrers = []byte("clicks_referrers") // code 0 day(8) host → count(8)
	bucketClickBatches    = []byte("click_batches")    // batch ID → applied unix seconds(8)
)

// embeddedClickSink keeps click counters in buckets of the embedded store's
// bbolt file.
type embeddedClickSink struct {
	db        *bbolt.DB
	lastPrune time.Time // guarded by bbolt's single writer
}

func newEmbeddedClickSink(db *bbolt.DB) (*embeddedClickSink, error) {
	err := db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketClicksHourly, bucketClicksReferrers, bucketClickBatches} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("click buckets: %w", err)
	}
	return &embeddedClickSink{db: db}, nil
}

func clickKey(code string, t int64, host string) []byte {
	k := make([]byte, 0, len(code)+9+len(host))
	k = append(k, code...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(t))
	return append(k, host...)
}

// ApplyClicks implements ClickSink in one bbolt transaction.
func (s *embeddedClickSink) ApplyClicks(ctx context.Context, batches []ClickBatch) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var applied int
	err := s.db.Update(func(tx *bbolt.Tx) error {
		ids := tx.Bucket(bucketClickBatches)
		now := time.Now()
		stamp := binary.BigEndian.AppendUint64(nil, uint64(now.Unix()))
		var todo []ClickBatch
		for _, b := range batches {
			if ids.Get([]byte(b.ID)) != nil {
				continue
			}
			if err := ids.Put([]byte(b.ID), stamp); err != nil {
				return err
			}
			todo = append(todo, b)
		}
		applied = len(todo)
		agg := aggregateClicks(todo)
		hourly := tx.Bucket(bucketClicksHourly)
		for _, k := range agg.sortedHours() {
			key := clickKey(k.code, k.hour, "")
			var v [16]byte
			if old := hourly.Get(key); len(old) == 16 {
				copy(v[:], old)
			}
			inc := agg.hourly[k]
			binary.BigEndian.PutUint64(v[:8], binary.BigEndian.Uint64(v[:8])+uint64(inc[0]))
			binary.BigEndian.PutUint64(v[8:], binary.BigEndian.Uint64(v[8:])+uint64(inc[1]))
			if err := hourly.Put(key, v[:]); err != nil {
				return err
			}
		}
		refs := tx.Bucket(bucketClicksReferrers)
		for _, k := range agg.sortedReferrers() {
			key := clickKey(k.code, k.day, k.host)
			var n uint64
			if old := refs.Get(key); len(old) == 8 {
				n = binary.BigEndian.Uint64(old)
			}
			if err := refs.Put(key, binary.BigEndian.AppendUint64(nil, n+uint64(agg.referrers[k]))); err != nil {
				return err
			}
		}
		if now.Sub(s.lastPrune) > time.Hour {
			s.lastPrune = now
			cut := uint64(now.Add(-clickBatchRetention).Unix())
			var old [][]byte
			err := ids.ForEach(func(k, v []byte) error {
				if len(v) == 8 && binary.BigEndian.Uint64(v) < cut {
					old = append(old, bytes.Clone(k))
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, k := range old {
				if err := ids.Delete(k); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("applying clicks: %w", err)
	}
	return applied, nil
}

// ClickStats implements ClickSink.
func (s *embeddedClickSink) ClickStats(ctx context.Context, code string, from, to time.Time) (ClickStats, error) {
	st := ClickStats{Code: code, Hourly: []HourlyClicks{}, Referrers: []ReferrerClicks{}}
	prefix := append([]byte(code), 0)
	firstDay, endDay := dayRange(from, to)
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketClicksHourly).Cursor()
		for k, v := c.Seek(clickKey(code, hourFloor(from).Unix(), "")); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			hour := int64(binary.BigEndian.Uint64(k[len(prefix):]))
			if !time.Unix(hour, 0).Before(to) {
				break
			}
			h := HourlyClicks{Hour: time.Unix(hour, 0).UTC(), People: int64(binary.BigEndian.Uint64(v[:8])), Bots: int64(binary.BigEndian.Uint64(v[8:]))}
			st.Hourly = append(st.Hourly, h)
			st.People += h.People
			st.Bots += h.Bots
		}
		hosts := map[string]int64{}
		c = tx.Bucket(bucketClicksReferrers).Cursor()
		for k, v := c.Seek(clickKey(code, firstDay.Unix(), "")); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			day := int64(binary.BigEndian.Uint64(k[len(prefix) : len(prefix)+8]))
			if day >= endDay.Unix() {
				break
			}
			hosts[string(k[len(prefix)+8:])] += int64(binary.BigEndian.Uint64(v))
		}
		st.Referrers = topReferrers(hosts)
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("click stats: %w", err)
	}
	st.Total = st.People + st.Bots
	return st, nil
}

// ClickTotal implements ClickSink.
func (s *embeddedClickSink) ClickTotal(ctx context.Context, code string) (int64, error) {
	var n int64
	prefix := append([]byte(code), 0)
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketClicksHourly).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			n += int64(binary.BigEndian.Uint64(v[:8]) + binary.BigEndian.Uint64(v[8:]))
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("click total: %w", err)
	}
	return n, nil
}

var _ ClickSink = (*embeddedClickSink)(nil)
