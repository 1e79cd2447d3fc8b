package store

import (
	"context"
	"encoding/binary"
	"errors"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// embeddedBaselines holds the imported click totals: code → baseline (8
// bytes big-endian); a link never imported has no key.
var embeddedBaselines = []byte("click_baselines")

// readBaseline is the baseline of code in b (nil: none), 0 if it has none.
func readBaseline(b *bolt.Bucket, code string) int64 {
	if b == nil {
		return 0
	}
	if v := b.Get([]byte(code)); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

// ImportTx implements ImportStore in one bbolt write transaction: bbolt
// runs one at a time, so concurrent imports of the same codes take turns.
func (s *EmbeddedStore) ImportTx(ctx context.Context, commit bool, fn func(context.Context, link.ImportTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.Db.Update(func(tx *bolt.Tx) error {
		if err := fn(ctx, embeddedImportTx{tx, s.Events}); err != nil {
			return err
		}
		if !commit {
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) {
		return nil
	}
	return err
}

// embeddedImportTx is ImportTx in a bbolt write transaction.
type embeddedImportTx embeddedLinkTx

// Stored implements ImportTx.
func (t embeddedImportTx) Stored(ctx context.Context, codes []string) (map[string]link.ImportLink, error) {
	out := make(map[string]link.ImportLink)
	b, base := t.tx.Bucket(EmbeddedLinks), t.tx.Bucket(embeddedBaselines)
	for _, code := range codes {
		rec, err := readRecord(b, code)
		if errors.Is(err, link.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[code] = link.ImportLink{Link: rec.link(code), Baseline: readBaseline(base, code)}
	}
	return out, nil
}

// Insert implements ImportTx: the links, their baselines, and their
// Hourly clicks as the click sink adds them.
func (t embeddedImportTx) Insert(ctx context.Context, links []link.ImportLink) ([]bool, error) {
	plain := make([]link.Link, len(links))
	for i, l := range links {
		plain[i] = l.Link
	}
	stored, err := embeddedLinkTx(t).Insert(ctx, plain)
	if err != nil {
		return nil, err
	}
	base, err := t.tx.CreateBucketIfNotExists(embeddedBaselines)
	if err != nil {
		return nil, err
	}
	for i, l := range links {
		if !stored[i] || l.Baseline == 0 {
			continue
		}
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], uint64(l.Baseline))
		if err := base.Put([]byte(l.Code), v[:]); err != nil {
			return nil, err
		}
	}
	if agg := clicks.HourlyAggregate(links, stored); len(agg.Hourly) > 0 {
		if err := createClickBuckets(t.tx); err != nil {
			return nil, err
		}
		if err := addHourlyBolt(t.tx, agg); err != nil {
			return nil, err
		}
	}
	return stored, nil
}

var _ link.ImportStore = (*EmbeddedStore)(nil)

// errDryRun rolls back an import transaction that must write nothing.
var errDryRun = errors.New("dry run")
