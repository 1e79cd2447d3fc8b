package shortener

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/axiomhq/hyperloglog"
	"github.com/jackc/pgx/v5"
	"go.etcd.io/bbolt"
)

// visitorPrecision is the HyperLogLog precision of the visitor sketches:
// 2^14 registers, a standard error of 1.04/√16384 ≈ 0.81%. A sketch stays
// sparse (exact-sized, a few bytes a visitor) while small.
const visitorPrecision = 14

// errBadSketch: stored bytes that are not a visitor sketch of this
// precision.
var errBadSketch = errors.New("not a visitor sketch")

// newVisitorSketch returns an empty sketch.
func newVisitorSketch() *hyperloglog.Sketch { return hyperloglog.New14() }

// decodeVisitorSketch reads a stored sketch: any bytes either decode to a
// sketch of visitorPrecision or give an error wrapping errBadSketch, never
// a panic.
func decodeVisitorSketch(b []byte) (*hyperloglog.Sketch, error) {
	if len(b) < 2 || b[1] != visitorPrecision {
		return nil, fmt.Errorf("%w: header", errBadSketch)
	}
	sk := newVisitorSketch()
	if err := sk.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadSketch, err)
	}
	return sk, nil
}

// addVisitors merges the hashes into the stored sketch b (nil: none yet)
// and returns the new bytes. A stored value that does not decode is
// replaced, not merged: the day's count restarts rather than the batch
// failing forever.
func addVisitors(b []byte, hashes []uint64) ([]byte, error) {
	sk, err := decodeVisitorSketch(b)
	if err != nil {
		sk = newVisitorSketch()
	}
	for _, h := range hashes {
		sk.InsertHash(h)
	}
	return sk.MarshalBinary()
}

// mergeVisitors merges stored sketches (undecodable ones skipped) and
// returns the estimate of distinct visitors: over several days with
// their own salts, visitor-days.
func mergeVisitors(stored [][]byte) int64 {
	all := newVisitorSketch()
	for _, b := range stored {
		if sk, err := decodeVisitorSketch(b); err == nil {
			_ = all.Merge(sk) // same precision: cannot fail
		}
	}
	return int64(all.Estimate())
}

// countVisitorsPG merges the batch's visitor hashes into each day's
// sketch in the click transaction: it first locks the days' rows (creating
// them empty), in (code, day) order after the hourly rows as the
// retention's roll-up does, so instances counting the same day take turns
// and never deadlock with it; then it writes the merged sketches.
func countVisitorsPG(ctx context.Context, tx pgx.Tx, agg clickAggregate) error {
	days := agg.visitorDays()
	if len(days) == 0 {
		return nil
	}
	codes, dates := make([]string, len(days)), make([]string, len(days))
	for i, d := range days {
		codes[i], dates[i] = d.code, pgDate(d.day)
	}
	rows, err := tx.Query(ctx, `INSERT INTO shortener_link_clicks_daily AS d (code, day)
		SELECT code, day FROM unnest($1::text[], $2::date[]) AS u(code, day) ORDER BY 1, 2
		ON CONFLICT (code, day) DO UPDATE SET people = d.people
		RETURNING code, day, visitors`, codes, dates)
	if err != nil {
		return fmt.Errorf("locking visitor days: %w", err)
	}
	stored := make(map[dayKey][]byte, len(days))
	var code string
	var day time.Time
	var b []byte
	if _, err := pgx.ForEachRow(rows, []any{&code, &day, &b}, func() error {
		stored[dayKey{code, day.Unix()}] = append([]byte(nil), b...)
		return nil
	}); err != nil {
		return fmt.Errorf("locking visitor days: %w", err)
	}
	sketches := make([][]byte, len(days))
	for i, d := range days {
		if sketches[i], err = addVisitors(stored[d], agg.visitors[d]); err != nil {
			return fmt.Errorf("counting visitors: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE shortener_link_clicks_daily AS d SET visitors = u.v
		FROM unnest($1::text[], $2::date[], $3::bytea[]) AS u(code, day, v)
		WHERE d.code = u.code AND d.day = u.day`, codes, dates, sketches); err != nil {
		return fmt.Errorf("counting visitors: %w", err)
	}
	return nil
}

// countVisitorsBolt merges the batch's visitor hashes into each day's
// sketch in the click transaction.
func countVisitorsBolt(tx *bbolt.Tx, agg clickAggregate) error {
	days := tx.Bucket(bucketClicksDaily)
	for _, d := range agg.visitorDays() {
		key := clickKey(d.code, d.day, "")
		v := decodeDailyValue(days.Get(key))
		sk, err := addVisitors(v.visitors, agg.visitors[d])
		if err != nil {
			return err
		}
		v.visitors = sk
		if err := days.Put(key, v.encode()); err != nil {
			return err
		}
	}
	return nil
}
