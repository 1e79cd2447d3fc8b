package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Buckets of the embedded click counters.
var (
	bucketClicksHourly    = []byte("clicks_hourly")       // code 0 hour(8) → people(8) bots(8)
	bucketClicksReferrers = []byte("clicks_referrers")    // code 0 day(8) host → count(8)
	bucketClickBatches    = []byte("click_batches")       // batch ID → applied unix seconds(8)
	BucketClickTotals     = []byte("click_totals")        // code → people(8) bots(8), never pruned
	BucketReferrerDays    = []byte("click_referrer_days") // code 0 day(8) → named hosts(8)
)

// EmbeddedClickSink keeps click counters in buckets of the embedded store's
// bbolt file.
type EmbeddedClickSink struct {
	Db *bbolt.DB
	// Events: record each counted click in the outbox (type "click",
	// clicks.ClickEvent), in the transaction that counts it. A handler
	// with webhooks on clicks sets it; safe to change at any time.
	Events    atomic.Bool
	referrers int       // named referrer hosts (and values of each dimension) per link per day
	lastPrune time.Time // guarded by bbolt's single writer
	pruning   embeddedPrunePosition
}

// NewEmbeddedClickSink returns the sink in db's buckets; referrers <= 0
// stands for DefaultClicksReferrers.
func NewEmbeddedClickSink(db *bbolt.DB, referrers int) (*EmbeddedClickSink, error) {
	if referrers <= 0 {
		referrers = clicks.DefaultClicksReferrers
	}
	if err := db.Update(createClickBuckets); err != nil {
		return nil, fmt.Errorf("click buckets: %w", err)
	}
	return &EmbeddedClickSink{Db: db, referrers: referrers}, nil
}

// createClickBuckets creates the buckets of the click counters that are
// missing.
func createClickBuckets(tx *bbolt.Tx) error {
	for _, b := range [][]byte{bucketClicksHourly, bucketClicksReferrers, bucketClickBatches, clicks.BucketClicksDaily, BucketVisitorSalts,
		bucketClicksDims, bucketDimDays, bucketDimVisitors} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	if err := createClickBoundBuckets(tx); err != nil {
		return err
	}
	return createAcrossBuckets(tx)
}

// createClickBoundBuckets creates the buckets of the totals and the
// referrer day counts, filled from the rollups on first use (a file of an
// older version), in the transaction that creates them.
func createClickBoundBuckets(tx *bbolt.Tx) error {
	if tx.Bucket(BucketClickTotals) == nil {
		totals, err := tx.CreateBucket(BucketClickTotals)
		if err != nil {
			return err
		}
		sums := map[string]*[2]uint64{}
		err = tx.Bucket(bucketClicksHourly).ForEach(func(k, v []byte) error {
			code, _, ok := splitClickKey(k)
			if !ok || len(v) != 16 {
				return nil
			}
			if sums[code] == nil {
				sums[code] = new([2]uint64)
			}
			sums[code][0] += binary.BigEndian.Uint64(v[:8])
			sums[code][1] += binary.BigEndian.Uint64(v[8:])
			return nil
		})
		if err != nil {
			return err
		}
		for code, v := range sums {
			if err := totals.Put([]byte(code), binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, v[0]), v[1])); err != nil {
				return err
			}
		}
	}
	if tx.Bucket(BucketReferrerDays) == nil {
		days, err := tx.CreateBucket(BucketReferrerDays)
		if err != nil {
			return err
		}
		counts := map[clicks.DayKey]uint64{}
		err = tx.Bucket(bucketClicksReferrers).ForEach(func(k, _ []byte) error {
			code, day, ok := splitClickKey(k)
			if ok && len(k) > len(code)+9 && string(k[len(code)+9:]) != clicks.OtherReferrer {
				counts[clicks.DayKey{Code: code, Day: day}]++
			}
			return nil
		})
		if err != nil {
			return err
		}
		for d, n := range counts {
			if err := days.Put(clickKey(d.Code, d.Day, ""), binary.BigEndian.AppendUint64(nil, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// splitClickKey reads the code and time of a clickKey.
func splitClickKey(k []byte) (code string, t int64, ok bool) {
	i := bytes.IndexByte(k, 0)
	if i < 0 || len(k) < i+9 {
		return "", 0, false
	}
	return string(k[:i]), int64(binary.BigEndian.Uint64(k[i+1 : i+9])), true
}

func clickKey(code string, t int64, host string) []byte {
	k := make([]byte, 0, len(code)+9+len(host))
	k = append(k, code...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(t))
	return append(k, host...)
}

// ApplyClicks implements Sink in one bbolt transaction.
func (s *EmbeddedClickSink) ApplyClicks(ctx context.Context, batches []clicks.Batch) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var applied int
	buf := getRecordBuffer()
	defer putRecordBuffer(buf) // after the transaction, which holds its records until then
	err := s.Db.Update(func(tx *bbolt.Tx) error {
		ids := tx.Bucket(bucketClickBatches)
		now := time.Now()
		stamp := binary.BigEndian.AppendUint64(nil, uint64(now.Unix()))
		var todo []clicks.Batch
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
		agg := clicks.AggregateClicks(todo)
		if err := addHourlyBolt(tx, agg); err != nil {
			return err
		}
		if err := countVisitorsBolt(tx, agg); err != nil {
			return err
		}
		if _, err := boltReferrers.count(tx, agg.Referrers, s.referrers); err != nil {
			return err
		}
		dims, err := boltDims.count(tx, agg.Dims, s.referrers)
		if err != nil {
			return err
		}
		if err := countDimVisitorsBolt(tx, agg.DimVisitors, dims); err != nil {
			return err
		}
		if err := recordClickEvents(tx, s.Events.Load(), todo, buf); err != nil {
			return err
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

// Stats implements Sink.
func (s *EmbeddedClickSink) ClickStats(ctx context.Context, code string, from, to time.Time) (clicks.Stats, error) {
	st := clicks.Stats{Code: code, Hourly: []link.HourlyClicks{}, Referrers: []clicks.ReferrerClicks{}}
	prefix := append([]byte(code), 0)
	firstDay, endDay := clicks.DayRange(from, to)
	err := s.Db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketClicksHourly).Cursor()
		for k, v := c.Seek(clickKey(code, clicks.HourFloor(from).Unix(), "")); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			hour := int64(binary.BigEndian.Uint64(k[len(prefix):]))
			if !time.Unix(hour, 0).Before(to) {
				break
			}
			h := link.HourlyClicks{Hour: time.Unix(hour, 0).UTC(), People: int64(binary.BigEndian.Uint64(v[:8])), Bots: int64(binary.BigEndian.Uint64(v[8:]))}
			st.Hourly = append(st.Hourly, h)
			st.People += h.People
			st.Bots += h.Bots
		}
		c = tx.Bucket(clicks.BucketClicksDaily).Cursor()
		var sketches [][]byte
		defer func() { st.Uniques = clicks.MergeVisitors(sketches) }()
		for k, v := c.Seek(clickKey(code, firstDay.Unix(), "")); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			day := int64(binary.BigEndian.Uint64(k[len(prefix):]))
			if day >= endDay.Unix() {
				break
			}
			d := clicks.DecodeDailyValue(v)
			if d.Visitors != nil {
				sketches = append(sketches, bytes.Clone(d.Visitors))
				st.Visitors = append(st.Visitors, clicks.DayVisitors{Day: time.Unix(day, 0).UTC(), Sketch: sketches[len(sketches)-1]})
			}
			if d.People+d.Bots > 0 {
				st.Daily = append(st.Daily, clicks.DailyClicks{Day: time.Unix(day, 0).UTC(), People: int64(d.People), Bots: int64(d.Bots)})
				st.People += int64(d.People)
				st.Bots += int64(d.Bots)
			}
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
		st.Referrers = clicks.RankReferrers(hosts)
		all := readClickTotals(tx, code)
		st.AllTime = &all
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("click stats: %w", err)
	}
	st.Total = st.People + st.Bots
	return st, nil
}

// addHourlyBolt adds the aggregate's hourly counters to the hourly
// rollup, the all-time totals and the day-first index of the overview.
func addHourlyBolt(tx *bbolt.Tx, agg clicks.ClickAggregate) error {
	hourly := tx.Bucket(bucketClicksHourly)
	for _, k := range agg.SortedHours() {
		key := clickKey(k.Code, k.Hour, "")
		var v [16]byte
		if old := hourly.Get(key); len(old) == 16 {
			copy(v[:], old)
		}
		inc := agg.Hourly[k]
		binary.BigEndian.PutUint64(v[:8], binary.BigEndian.Uint64(v[:8])+uint64(inc[0]))
		binary.BigEndian.PutUint64(v[8:], binary.BigEndian.Uint64(v[8:])+uint64(inc[1]))
		if err := hourly.Put(key, v[:]); err != nil {
			return err
		}
	}
	if err := addClickTotals(tx, agg); err != nil {
		return err
	}
	return addDayLinks(tx, agg)
}

// ClickTotal implements Sink: the all-time total.
func (s *EmbeddedClickSink) ClickTotal(ctx context.Context, code string) (int64, error) {
	var t clicks.Totals
	err := s.Db.View(func(tx *bbolt.Tx) error {
		t = readClickTotals(tx, code)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("click total: %w", err)
	}
	return t.Total, nil
}

func readClickTotals(tx *bbolt.Tx, code string) clicks.Totals {
	var t clicks.Totals
	if v := tx.Bucket(BucketClickTotals).Get([]byte(code)); len(v) == 16 {
		t.People, t.Bots = int64(binary.BigEndian.Uint64(v[:8])), int64(binary.BigEndian.Uint64(v[8:]))
	}
	t.Imported = readBaseline(tx.Bucket(embeddedBaselines), code)
	t.Total = t.People + t.Bots + t.Imported
	return t
}

// addClickTotals adds the batch's clicks to each link's all-time totals.
func addClickTotals(tx *bbolt.Tx, agg clicks.ClickAggregate) error {
	sums := map[string]*[2]int64{}
	for k, v := range agg.Hourly {
		if sums[k.Code] == nil {
			sums[k.Code] = new([2]int64)
		}
		sums[k.Code][0] += v[0]
		sums[k.Code][1] += v[1]
	}
	totals := tx.Bucket(BucketClickTotals)
	for code, inc := range sums {
		var v [16]byte
		if old := totals.Get([]byte(code)); len(old) == 16 {
			copy(v[:], old)
		}
		binary.BigEndian.PutUint64(v[:8], binary.BigEndian.Uint64(v[:8])+uint64(inc[0]))
		binary.BigEndian.PutUint64(v[8:], binary.BigEndian.Uint64(v[8:])+uint64(inc[1]))
		if err := totals.Put([]byte(code), v[:]); err != nil {
			return err
		}
	}
	return nil
}

var _ clicks.Sink = (*EmbeddedClickSink)(nil)

// BucketVisitorSalts holds the embedded daily salts: day(8) → salt.
var BucketVisitorSalts = []byte("visitor_salts")

// VisitorSalt implements VisitorSalter in the embedded store's bucket.
func (s *EmbeddedClickSink) VisitorSalt(ctx context.Context, day time.Time) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := binary.BigEndian.AppendUint64(nil, uint64(clicks.DayFloor(day).Unix()))
	var salt []byte
	err := s.Db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(BucketVisitorSalts)
		if err := deleteSaltsBefore(b, key); err != nil {
			return err
		}
		if v := b.Get(key); v != nil {
			salt = bytes.Clone(v)
			return nil
		}
		salt = clicks.NewVisitorSalt()
		return b.Put(key, salt)
	})
	if err != nil {
		return nil, fmt.Errorf("visitor salt: %w", err)
	}
	return salt, nil
}

// deleteSaltsBefore deletes the salts of b whose day key sorts before key.
func deleteSaltsBefore(b *bbolt.Bucket, key []byte) error {
	var old [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, key) < 0; k, _ = c.Next() {
		old = append(old, bytes.Clone(k))
	}
	for _, k := range old {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// countVisitorsBolt merges the batch's visitor hashes into each day's
// sketch in the click transaction.
func countVisitorsBolt(tx *bbolt.Tx, agg clicks.ClickAggregate) error {
	days := tx.Bucket(clicks.BucketClicksDaily)
	for _, d := range agg.VisitorDays() {
		key := clickKey(d.Code, d.Day, "")
		v := clicks.DecodeDailyValue(days.Get(key))
		sk, err := clicks.AddVisitors(v.Visitors, agg.Visitors[d])
		if err != nil {
			return err
		}
		v.Visitors = sk
		if err := days.Put(key, v.Encode()); err != nil {
			return err
		}
	}
	return nil
}

var _ clicks.VisitorSalter = (*EmbeddedClickSink)(nil)
