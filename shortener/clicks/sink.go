// Package clicks is the shortener's click pipeline below the module: which
// requests count and what a click records (user agent class, referrer
// host, GeoIP country and city, device, visitor hash under a daily salt),
// the recorder that buffers clicks off the request path, the Redis stream
// and its consumer group, the writer's idempotent batches, the Sink
// contract the stores implement, the rollups' retention, and the stats
// answers built from them. It imports nothing of Caddy or zap.
package clicks

import (
	"context"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Batch is a set of clicks with an ID unique across instances: the
// unit of idempotence. A sink applies a batch ID at most once.
type Batch struct {
	ID     string
	Clicks []Click

	held int64 // bytes its clicks were held for in process (the writer's)
}

// Sink is where click counters live: PostgreSQL or the embedded store.
type Sink interface {
	// ApplyClicks adds the clicks of the batches whose IDs it has not seen,
	// and records those IDs, in one transaction; batches seen before are
	// skipped. It returns how many batches were new.
	ApplyClicks(ctx context.Context, batches []Batch) (applied int, err error)
	// Stats returns a code's counters for hours in [from, to).
	ClickStats(ctx context.Context, code string, from, to time.Time) (Stats, error)
	// ClickTotal returns all clicks ever counted for code.
	ClickTotal(ctx context.Context, code string) (int64, error)
	// ClickBreakdown returns code's limit values of dim (one of
	// ClickDimensions or DimReferrer) with the most clicks over the UTC
	// days overlapping [from, to), by clicks then value; code "": across
	// all links. A link's breakdown by a dimension of UniqueDims sets
	// each entry's Uniques.
	ClickBreakdown(ctx context.Context, code, dim string, from, to time.Time, limit int) ([]BreakdownEntry, error)
	// Overview returns the clicks of all links over the UTC days
	// overlapping [from, to): totals and the limit links with the most
	// (From, To, Total, People, Bots and Links of Overview).
	ClickOverview(ctx context.Context, from, to time.Time, limit int) (Overview, error)
}

// RowReader is a click sink that reads links' rollups for an export.
// Both stores' sinks implement it.
type RowReader interface {
	// ClickRows returns each code's rollups with clicks, by hour.
	ClickRows(ctx context.Context, codes []string) (map[string][]link.HourlyClicks, error)
}
