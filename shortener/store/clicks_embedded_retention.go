package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// prunedBuckets are the embedded rollups retention prunes, in the order a
// pass walks them (a day's count of named values after its values).
var prunedBuckets = [...][]byte{bucketClicksHourly, clicks.BucketClicksDaily, bucketClicksReferrers, BucketReferrerDays,
	bucketClicksDims, bucketDimVisitors, bucketDimDays, BucketDayDims, BucketDayLinks}

// pruneScan bounds the keys one page looks at, so a page's write
// transaction stays short however few of them are old.
const pruneScan = 64 << 10

// embeddedPrunePosition is where the current pass stopped: a bucket of
// prunedBuckets and the last key looked at (nil: its start).
type embeddedPrunePosition struct {
	mu     sync.Mutex
	bucket int
	after  []byte
}

// PruneClicks implements ClickPruner: one write transaction deletes up to
// Limit keys dated before their cutoff (an hourly counter past the hourly
// one only is added to its daily rollup first), looking at no more than
// pruneScan keys, and the next call goes on from there; done when the
// pass has walked every pruned bucket to its end. The visitor salts of
// the days before cut.Today go first.
func (s *EmbeddedClickSink) PruneClicks(ctx context.Context, cut clicks.ClickCutoffs, limit int) (int, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	p := &s.pruning
	p.mu.Lock()
	defer p.mu.Unlock()
	saved := embeddedPrunePosition{bucket: p.bucket, after: p.after}
	daily, hourly := cut.Daily.Unix(), cut.Hourly.Unix()
	var deleted int
	var done bool
	err := s.Db.Update(func(tx *bbolt.Tx) error {
		if !cut.Today.IsZero() {
			today := binary.BigEndian.AppendUint64(nil, uint64(cut.Today.Unix()))
			if err := deleteSaltsBefore(tx.Bucket(BucketVisitorSalts), today); err != nil {
				return err
			}
		}
		scanned := 0
		for p.bucket < len(prunedBuckets) {
			b := tx.Bucket(prunedBuckets[p.bucket])
			limitAt := daily
			if p.bucket == 0 {
				limitAt = max(daily, hourly)
			}
			c := b.Cursor()
			k, _ := c.First()
			if p.after != nil {
				if k, _ = c.Seek(p.after); bytes.Equal(k, p.after) {
					k, _ = c.Next()
				}
			}
			var old [][]byte
			for ; k != nil && deleted+len(old) < limit && scanned < pruneScan; k, _ = c.Next() {
				scanned++
				p.after = bytes.Clone(k)
				if _, t, ok := splitClickKey(k); ok && t < limitAt {
					old = append(old, p.after)
				}
			}
			for _, o := range old {
				if err := rollUpHour(tx, p.bucket == 0, o, b.Get(o), daily); err != nil {
					return err
				}
				if err := b.Delete(o); err != nil {
					return err
				}
			}
			deleted += len(old)
			if k != nil {
				return nil // page full: the next call goes on here
			}
			p.bucket, p.after = p.bucket+1, nil
		}
		done = true
		p.bucket = 0
		return nil
	})
	if err != nil {
		p.bucket, p.after = saved.bucket, saved.after
		return 0, false, fmt.Errorf("pruning clicks: %w", err)
	}
	return deleted, done, nil
}

// rollUpHour adds an hourly counter (key k, value v) dated from the daily
// cutoff on to its daily rollup; anything else it leaves alone.
func rollUpHour(tx *bbolt.Tx, hourly bool, k, v []byte, daily int64) error {
	code, hour, ok := splitClickKey(k)
	if !hourly || !ok || hour < daily || len(v) != 16 {
		return nil
	}
	days := tx.Bucket(clicks.BucketClicksDaily)
	key := clickKey(code, hour-clicks.Mod(hour, 86400), "")
	d := clicks.DecodeDailyValue(days.Get(key))
	d.People += binary.BigEndian.Uint64(v[:8])
	d.Bots += binary.BigEndian.Uint64(v[8:])
	return days.Put(key, d.Encode())
}

var _ clicks.ClickPruner = (*EmbeddedClickSink)(nil)
