package store

import (
	"bytes"
	"encoding/binary"
	"time"

	"go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// bucketDimVisitors holds the visitor sketches per rule and variant value
// (clicks.UniqueDims), keyed as bucketClicksDims:
// code 0 day(8) dim 0 value → sketch.
var bucketDimVisitors = []byte("clicks_dim_visitors")

// countDimVisitorsBolt merges the batch's visitors per value into their
// day's sketch in the click transaction, each under the row its clicks
// went to (rows: what boltDims.count wrote).
func countDimVisitorsBolt(tx *bbolt.Tx, vis map[clicks.DimKey][]uint64, rows map[clicks.DimKey]int64) error {
	if len(vis) == 0 {
		return nil
	}
	b := tx.Bucket(bucketDimVisitors)
	placed, keys := clicks.PlaceDimVisitors(vis, rows)
	for _, k := range keys {
		key := boltDims.keyOf(k)
		sk, err := clicks.AddVisitors(b.Get(key), placed[k])
		if err != nil {
			return err
		}
		if err := b.Put(key, sk); err != nil {
			return err
		}
	}
	return nil
}

// dimUniquesBolt sets the Uniques of a link's breakdown by a dimension of
// clicks.UniqueDims over the days in [first, end): one cursor over the
// link's sketches of those days, keeping the entries' values.
func dimUniquesBolt(tx *bbolt.Tx, code, dim string, first, end time.Time, entries []clicks.BreakdownEntry) {
	want := make(map[string]bool, len(entries))
	for _, e := range entries {
		want[e.Value] = true
	}
	prefix, sub := append([]byte(code), 0), []byte(dim+"\x00")
	sketches := make(map[string][][]byte, len(entries))
	c := tx.Bucket(bucketDimVisitors).Cursor()
	for k, v := c.Seek(clickKey(code, first.Unix(), "")); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if int64(binary.BigEndian.Uint64(k[len(prefix):len(prefix)+8])) >= end.Unix() {
			break
		}
		if rest := k[len(prefix)+8:]; bytes.HasPrefix(rest, sub) && want[string(rest[len(sub):])] {
			val := string(rest[len(sub):])
			sketches[val] = append(sketches[val], bytes.Clone(v))
		}
	}
	clicks.WithDimUniques(entries, sketches)
}
