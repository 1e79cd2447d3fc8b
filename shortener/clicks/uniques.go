package clicks

import (
	"errors"
	"fmt"

	"github.com/axiomhq/hyperloglog"
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

// DecodeVisitorSketch reads a stored sketch: any bytes either decode to a
// sketch of visitorPrecision or give an error wrapping errBadSketch, never
// a panic.
func DecodeVisitorSketch(b []byte) (*hyperloglog.Sketch, error) {
	if len(b) < 2 || b[1] != visitorPrecision {
		return nil, fmt.Errorf("%w: header", errBadSketch)
	}
	sk := newVisitorSketch()
	if err := sk.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadSketch, err)
	}
	return sk, nil
}

// AddVisitors merges the hashes into the stored sketch b (nil: none yet)
// and returns the new bytes. A stored value that does not decode is
// replaced, not merged: the day's count restarts rather than the batch
// failing forever.
func AddVisitors(b []byte, hashes []uint64) ([]byte, error) {
	sk, err := DecodeVisitorSketch(b)
	if err != nil {
		sk = newVisitorSketch()
	}
	for _, h := range hashes {
		sk.InsertHash(h)
	}
	return sk.MarshalBinary()
}

// MergeVisitors merges stored sketches (undecodable ones skipped) and
// returns the estimate of distinct visitors: over several days with
// their own salts, visitor-days.
func MergeVisitors(stored [][]byte) int64 {
	all := newVisitorSketch()
	for _, b := range stored {
		if sk, err := DecodeVisitorSketch(b); err == nil {
			_ = all.Merge(sk) // same precision: cannot fail
		}
	}
	return int64(all.Estimate())
}
