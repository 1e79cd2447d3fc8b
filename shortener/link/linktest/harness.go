// Package linktest is the conformance suite of link.Store: what every
// store (PostgreSQL, embedded, a test double) must do, checked the same
// way for each. A store's own tests call Run with a Harness.
package linktest

import (
	"context"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Harness is how the suite reaches a store.
type Harness struct {
	// Open returns a fresh, empty store that the test's cleanup closes.
	Open func(t *testing.T) link.Store

	// Clicks returns the click side of a store Open returned, which the
	// listing checks use for sorts by clicks and totals. Nil skips
	// nothing: a store that lists links must count clicks.
	Clicks func(t *testing.T, s link.Store) Clicks

	// Tunings, if set, returns settings of s under which the searches
	// are walked again (PostgreSQL's search walk lengths), and a func
	// that restores the default.
	Tunings func(s link.Store) (settings []func(), reset func())
}

// Clicks is the part of a store's click sink the suite needs.
type Clicks interface {
	// Add counts perCode[code] clicks for each code at the time at.
	Add(ctx context.Context, perCode map[string]int64, at time.Time) error
	// Total is a code's all-time click count.
	Total(ctx context.Context, code string) (int64, error)
	// PruneAll removes every hourly and daily row before cutoff, as
	// retention would; totals must survive it.
	PruneAll(ctx context.Context, cutoff time.Time) error
}

// Run runs the conformance suite against the stores h opens.
func Run(t *testing.T, h Harness) {
	if h.Open == nil {
		t.Fatal("linktest: Harness.Open is nil")
	}
	runSuite(t, h)
}
