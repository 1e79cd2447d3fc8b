package store

import (
	"encoding/binary"

	"go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// Buckets of the embedded dimension counters.
var (
	bucketClicksDims = []byte("clicks_dims")    // code 0 day(8) dim 0 value → count(8)
	bucketDimDays    = []byte("click_dim_days") // code 0 day(8) dim → named values(8)
	// Across links, by day first (an empty code), for GET <api>/stats.
	BucketDayDims  = []byte("clicks_day_dims")  // 0 day(8) dim 0 value → count(8), dim also "referrer"
	BucketDayLinks = []byte("clicks_day_links") // 0 day(8) code → people(8) bots(8)
)

// boltCapped writes capped counters (clicks_cap.go) to a bucket of values
// and a bucket of named values per slot, each keyed by its clickKey, and
// adds each write to its day's count across links (acrossOf, in
// BucketDayDims).
type boltCapped[K clicks.CappedKey[K, S], S clicks.CappedSlot[S]] struct {
	values, slots []byte // bucket names
	keyOf         func(K) []byte
	slotOf        func(S) []byte
	acrossOf      func(K) []byte
}

var (
	boltReferrers = boltCapped[clicks.RefKey, clicks.DayKey]{
		values: bucketClicksReferrers, slots: BucketReferrerDays,
		keyOf:    func(k clicks.RefKey) []byte { return clickKey(k.Code, k.Day, k.Host) },
		slotOf:   func(d clicks.DayKey) []byte { return clickKey(d.Code, d.Day, "") },
		acrossOf: func(k clicks.RefKey) []byte { return clickKey("", k.Day, clicks.DimReferrer+"\x00"+k.Host) },
	}
	boltDims = boltCapped[clicks.DimKey, clicks.DimDay]{
		values: bucketClicksDims, slots: bucketDimDays,
		keyOf:    func(k clicks.DimKey) []byte { return clickKey(k.Code, k.Day, k.Dim+"\x00"+k.Val) },
		slotOf:   func(d clicks.DimDay) []byte { return clickKey(d.Code, d.Day, d.Dim) },
		acrossOf: func(k clicks.DimKey) []byte { return clickKey("", k.Day, k.Dim+"\x00"+k.Val) },
	}
)

// count adds the increments within the cap of limit named values per
// Slot; bbolt's single writer makes the count exact. It returns the
// increments written, by row (clicks.CapValues).
func (c boltCapped[K, S]) count(tx *bbolt.Tx, incs map[K]int64, limit int) (map[K]int64, error) {
	if len(incs) == 0 {
		return nil, nil
	}
	values, slots, across := tx.Bucket(c.values), tx.Bucket(c.slots), tx.Bucket(BucketDayDims)
	used := map[S]int64{}
	for _, s := range clicks.CapSlots(incs) {
		if v := slots.Get(c.slotOf(s)); len(v) == 8 {
			used[s] = int64(binary.BigEndian.Uint64(v))
		}
	}
	stored := func(k K) bool { return values.Get(c.keyOf(k)) != nil }
	writes, added := clicks.CapValues(incs, stored, used, limit)
	for _, k := range clicks.SortedCapKeys(writes) {
		if err := addUint64(values, c.keyOf(k), writes[k]); err != nil {
			return nil, err
		}
		if err := addUint64(across, c.acrossOf(k), writes[k]); err != nil {
			return nil, err
		}
	}
	for s, a := range added {
		if err := addUint64(slots, c.slotOf(s), a); err != nil {
			return nil, err
		}
	}
	return writes, nil
}

// addUint64 adds n to the 8-byte counter at key (0 if absent).
func addUint64(b *bbolt.Bucket, key []byte, n int64) error {
	var old uint64
	if v := b.Get(key); len(v) == 8 {
		old = binary.BigEndian.Uint64(v)
	}
	return b.Put(key, binary.BigEndian.AppendUint64(nil, old+uint64(n)))
}
