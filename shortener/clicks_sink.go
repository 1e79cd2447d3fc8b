package shortener

import (
	"context"
	"time"
)

// ClickBatch is a set of clicks with an ID unique across instances: the
// unit of idempotence. A sink applies a batch ID at most once.
type ClickBatch struct {
	ID     string
	Clicks []Click

	held int64 // bytes its clicks were held for in process (the writer's)
}

// ClickSink is where click counters live: PostgreSQL or the embedded store.
type ClickSink interface {
	// ApplyClicks adds the clicks of the batches whose IDs it has not seen,
	// and records those IDs, in one transaction; batches seen before are
	// skipped. It returns how many batches were new.
	ApplyClicks(ctx context.Context, batches []ClickBatch) (applied int, err error)
	// ClickStats returns a code's counters for hours in [from, to).
	ClickStats(ctx context.Context, code string, from, to time.Time) (ClickStats, error)
	// ClickTotal returns all clicks ever counted for code.
	ClickTotal(ctx context.Context, code string) (int64, error)
	// ClickBreakdown returns code's limit values of dim (one of
	// clickDimensions or DimReferrer) with the most clicks over the UTC
	// days overlapping [from, to), by clicks then value; code "": across
	// all links.
	ClickBreakdown(ctx context.Context, code, dim string, from, to time.Time, limit int) ([]BreakdownEntry, error)
	// ClickOverview returns the clicks of all links over the UTC days
	// overlapping [from, to): totals and the limit links with the most
	// (From, To, Total, People, Bots and Links of ClickOverview).
	ClickOverview(ctx context.Context, from, to time.Time, limit int) (ClickOverview, error)
}
