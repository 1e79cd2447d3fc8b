package link

import (
	"context"
	"time"
)

// ImportLink is a link as an import brings it (import.go): its times,
// revocation and served clicks as the other shortener had them, and
// Baseline, the click total it had there (0 to MaxBaseline).
type ImportLink struct {
	Link
	Baseline int64
	// Hourly are counted clicks the import adds with the link (people and
	// bots of UTC hours, import_stats.go); Stored leaves it nil.
	Hourly []HourlyClicks
}

// MaxBaseline bounds an imported click total.
const MaxBaseline = 1_000_000_000_000

// ImportTx is one import transaction of an ImportStore.
type ImportTx interface {
	// Stored returns the stored links among codes, by code, with their
	// baselines (0 for links never imported).
	Stored(ctx context.Context, codes []string) (map[string]ImportLink, error)
	// Insert stores each link whose code is free with its baseline and its
	// hourly clicks, and reports in order which were stored. A taken
	// code (by a concurrent transaction too, once it commits) changes
	// nothing and reports false.
	Insert(ctx context.Context, links []ImportLink) ([]bool, error)
}

// ImportStore imports links. Both stores implement it.
type ImportStore interface {
	// ImportTx runs fn in one transaction, committed when commit is true
	// and fn returns nil, rolled back otherwise.
	ImportTx(ctx context.Context, commit bool, fn func(context.Context, ImportTx) error) error
}

// HourlyClicks counts one hour's clicks (hour in UTC, at its start).
type HourlyClicks struct {
	Hour   time.Time `json:"hour"`
	People int64     `json:"people"`
	Bots   int64     `json:"bots"`
}
