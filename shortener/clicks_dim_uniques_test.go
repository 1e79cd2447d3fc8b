package shortener

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// dimUniqueSinks are both stores' sinks with a cap of two named values
// per link, day and dimension.
func dimUniqueSinks() map[string]func(t *testing.T) clicks.Sink {
	return map[string]func(t *testing.T) clicks.Sink{
		"postgres": func(t *testing.T) clicks.Sink {
			return store.NewPostgresClickSink(testClickPool(t, testenv.Postgres(t)), 2)
		},
		"embedded": func(t *testing.T) clicks.Sink {
			st, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			s, err := clickSinkFor(st, 2)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

// breakdownUniques returns a link's breakdown by dim as value → uniques
// (-1: none), and value → clicks.
func breakdownUniques(t *testing.T, s clicks.Sink, code, dim string, from, to time.Time) (map[string]int64, map[string]int64) {
	t.Helper()
	entries, err := s.ClickBreakdown(t.Context(), code, dim, from, to, 100)
	if err != nil {
		t.Fatal(err)
	}
	uniques, counts := map[string]int64{}, map[string]int64{}
	for _, e := range entries {
		uniques[e.Value], counts[e.Value] = -1, e.Clicks
		if e.Uniques != nil {
			uniques[e.Value] = *e.Uniques
		}
	}
	return uniques, counts
}

// The sinks keep a visitor sketch per rule and variant value and day in
// the click transaction: each variant's uniques are the distinct people
// who hit it (a repeat visit once; bots and unknown visitors not at all),
// a replayed batch adds nothing, a value past the cap counts its visitors
// under other as its clicks, several days are visitor-days, only rule and
// variant have uniques (and only for a link), and retention prunes them.
func TestClickSinkDimUniques(t *testing.T) {
	for name, open := range dimUniqueSinks() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			dayA := time.Date(2026, 6, 10, 0, 0, 0, 0, time.UTC)
			dayB := dayA.AddDate(0, 0, 1)
			visits := func(day time.Time, variant string, from, to int, class clicks.UAClass) []clicks.Click {
				var cs []clicks.Click
				for i := from; i < to; i++ {
					cs = append(cs, clicks.Click{Code: "split", At: day.Add(time.Duration(i%24) * time.Hour), Class: class,
						Rule: "French", Variant: variant, Visitor: clicks.VisitorHash([]byte("salt"), day.Format(time.DateOnly)+itoa(int64(i)), "UA")})
				}
				return cs
			}
			unknown := visits(dayA, "a", 0, 3, clicks.ClassBrowser)
			for i := range unknown {
				unknown[i].Visitor = 0
			}
			apply := func(batches ...clicks.Batch) {
				t.Helper()
				if _, err := s.ApplyClicks(t.Context(), batches); err != nil {
					t.Fatal(err)
				}
			}
			apply(clicks.Batch{ID: "u-1", Clicks: append(visits(dayA, "a", 0, 10, clicks.ClassBrowser), visits(dayA, "b", 10, 15, clicks.ClassBrowser)...)})
			apply(clicks.Batch{ID: "u-2", Clicks: append(append(visits(dayA, "a", 0, 10, clicks.ClassBrowser), // repeat visits
				visits(dayA, "b", 100, 120, clicks.ClassBot)...), append(unknown, visits(dayA, "b", 0, 1, clicks.ClassBrowser)...)...)},
				clicks.Batch{ID: "u-3", Clicks: visits(dayA, "c", 20, 23, clicks.ClassBrowser)}, // past the cap of 2
				clicks.Batch{ID: "u-4", Clicks: visits(dayB, "a", 0, 5, clicks.ClassOther)})
			if n, err := s.ApplyClicks(t.Context(), []clicks.Batch{{ID: "u-1", Clicks: visits(dayA, "a", 500, 600, clicks.ClassBrowser)}}); err != nil || n != 0 {
				t.Fatalf("replayed batch: applied %d, %v; want 0", n, err)
			}
			check := func(what string, dim string, from, to time.Time, wantUniques, wantClicks map[string]int64) {
				t.Helper()
				u, c := breakdownUniques(t, s, "split", dim, from, to)
				if fmt.Sprint(u) != fmt.Sprint(wantUniques) || fmt.Sprint(c) != fmt.Sprint(wantClicks) {
					t.Errorf("%s: uniques %v clicks %v, want %v and %v", what, u, c, wantUniques, wantClicks)
				}
			}
			check("day A by variant", clicks.DimVariant, dayA, dayB, map[string]int64{"a": 10, "b": 6, clicks.OtherReferrer: 3},
				map[string]int64{"a": 23, "b": 26, clicks.OtherReferrer: 3})
			check("day A by rule", clicks.DimRule, dayA, dayB, map[string]int64{"French": 18}, map[string]int64{"French": 52})
			check("days A and B by variant (visitor-days)", clicks.DimVariant, dayA, dayB.Add(time.Hour),
				map[string]int64{"a": 15, "b": 6, clicks.OtherReferrer: 3}, map[string]int64{"a": 28, "b": 26, clicks.OtherReferrer: 3})
			check("day B by rule", clicks.DimRule, dayB, dayB.Add(time.Hour), map[string]int64{"French": 5}, map[string]int64{"French": 5})
			check("day A by device: no uniques", clicks.DimDevice, dayA, dayB, map[string]int64{clicks.UnknownDim: -1},
				map[string]int64{clicks.UnknownDim: 52})
			across, err := s.ClickBreakdown(t.Context(), "", clicks.DimVariant, dayA, dayB, 10)
			if err != nil || len(across) != 3 || across[0].Uniques != nil {
				t.Errorf("across links by variant = %+v, %v; want 3 values without uniques", across, err)
			}
			pruneAll(t, s, clicks.ClickCutoffs{Hourly: dayB, Daily: dayB}, 7)
			check("day A pruned", clicks.DimVariant, dayA, dayB.Add(time.Hour), map[string]int64{"a": 5}, map[string]int64{"a": 5})
		})
	}
}
