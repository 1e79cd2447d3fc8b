package store

import (
	"encoding/binary"

	"go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// The embedded store's counters across links are kept by day first (keys
// of an empty code, clickKey("", day, ...)), so GET <api>/stats reads a
// range of days with one cursor and retention prunes them as the rest.

// addDayLinks adds the batch's clicks to each link's day in
// BucketDayLinks.
func addDayLinks(tx *bbolt.Tx, agg clicks.ClickAggregate) error {
	days := tx.Bucket(BucketDayLinks)
	for _, k := range agg.SortedHours() {
		inc := agg.Hourly[k]
		if err := addPair(days, clickKey("", k.Hour-clicks.Mod(k.Hour, 86400), k.Code), uint64(inc[0]), uint64(inc[1])); err != nil {
			return err
		}
	}
	return nil
}

// createAcrossBuckets creates BucketDayLinks and BucketDayDims, filled on
// first use (a file of an older version) from the hourly and daily
// rollups and the referrer rows, in the transaction that creates them.
func createAcrossBuckets(tx *bbolt.Tx) error {
	if tx.Bucket(BucketDayLinks) == nil {
		days, err := tx.CreateBucket(BucketDayLinks)
		if err != nil {
			return err
		}
		for _, b := range [][]byte{bucketClicksHourly, clicks.BucketClicksDaily} {
			err := tx.Bucket(b).ForEach(func(k, v []byte) error {
				code, t, ok := splitClickKey(k)
				if !ok || len(v) < 16 {
					return nil
				}
				d := clicks.DecodeDailyValue(v)
				return addPair(days, clickKey("", t-clicks.Mod(t, 86400), code), d.People, d.Bots)
			})
			if err != nil {
				return err
			}
		}
	}
	if tx.Bucket(BucketDayDims) == nil {
		dims, err := tx.CreateBucket(BucketDayDims)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketClicksReferrers).ForEach(func(k, v []byte) error {
			code, day, ok := splitClickKey(k)
			if !ok || len(v) != 8 {
				return nil
			}
			return addUint64(dims, clickKey("", day, clicks.DimReferrer+"\x00"+string(k[len(code)+9:])), int64(binary.BigEndian.Uint64(v)))
		})
	}
	return nil
}

// addPair adds people and bots to the 16-byte counter at key.
func addPair(b *bbolt.Bucket, key []byte, people, bots uint64) error {
	var v [16]byte
	if old := b.Get(key); len(old) == 16 {
		copy(v[:], old)
	}
	binary.BigEndian.PutUint64(v[:8], binary.BigEndian.Uint64(v[:8])+people)
	binary.BigEndian.PutUint64(v[8:], binary.BigEndian.Uint64(v[8:])+bots)
	return b.Put(key, v[:])
}
