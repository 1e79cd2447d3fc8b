package shortener

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// newTestPostgresClickSink returns a click sink on a fresh schema migrated
// by OpenPostgres (with the click tables of 002_clicks.up.sql).
func newTestPostgresClickSink(t *testing.T) *store.PostgresClickSink {
	t.Helper()
	return store.NewPostgresClickSink(testClickPool(t, testenv.Postgres(t)), 0)
}

// testClickPool opens a pool on dsn and migrates it as the handler does.
func testClickPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatalf("pgxpool: %v", err)
	}
	t.Cleanup(pool.Close)
	st, err := store.OpenPostgres(ctx, pool)
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	if _, err := clickSinkFor(st, 0); err != nil {
		t.Fatal(err)
	}
	return pool
}

// newTestEmbeddedClickSink returns the click sink of a fresh embedded store.
func newTestEmbeddedClickSink(t *testing.T) clicks.Sink {
	t.Helper()
	st, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := clickSinkFor(st, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testClickSinks(t *testing.T) map[string]func(t *testing.T) clicks.Sink {
	return map[string]func(t *testing.T) clicks.Sink{
		"postgres": func(t *testing.T) clicks.Sink { return newTestPostgresClickSink(t) },
		"embedded": func(t *testing.T) clicks.Sink { return newTestEmbeddedClickSink(t) },
	}
}

func TestClickSinkStats(t *testing.T) {
	for name, open := range testClickSinks(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
			var clickList []clicks.Click
			add := func(n int, at time.Time, ref string, class clicks.UAClass) {
				for range n {
					clickList = append(clickList, clicks.Click{Code: "abc1234", At: at, Referrer: ref, Class: class})
				}
			}
			add(3, day.Add(10*time.Hour+5*time.Minute), "a.example", clicks.ClassBrowser)
			add(2, day.Add(10*time.Hour+59*time.Minute), "", clicks.ClassBot)
			add(1, day.Add(11*time.Hour), "b.example", clicks.ClassOther)
			add(4, day.Add(24*time.Hour+time.Hour), "b.example", clicks.ClassBrowser) // next day
			for i := range 12 {                                                       // 12 hosts with i+1 clicks: top 10 kept
				add(i+1, day.Add(-48*time.Hour), fmt.Sprintf("h%02d.example", i), clicks.ClassBrowser)
			}
			clickList = append(clickList, clicks.Click{Code: "other12", At: day.Add(10 * time.Hour), Class: clicks.ClassBrowser})
			n, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "t-1", Clicks: clickList[:5]}, {ID: "t-2", Clicks: clickList[5:]}})
			if err != nil || n != 2 {
				t.Fatalf("ApplyClicks = %d, %v; want 2, nil", n, err)
			}
			// Replays, alone and mixed with a new batch, are skipped.
			n, err = s.ApplyClicks(ctx, []clicks.Batch{{ID: "t-1", Clicks: clickList[:5]}, {ID: "t-2", Clicks: clickList[5:]}})
			if err != nil || n != 0 {
				t.Fatalf("ApplyClicks(replay) = %d, %v; want 0, nil", n, err)
			}
			late := clicks.Click{Code: "abc1234", At: day.Add(11*time.Hour + 30*time.Minute), Class: clicks.ClassBot}
			n, err = s.ApplyClicks(ctx, []clicks.Batch{{ID: "t-1", Clicks: clickList[:5]}, {ID: "t-3", Clicks: []clicks.Click{late}}, {ID: "t-3", Clicks: []clicks.Click{late}}})
			if err != nil || n != 1 {
				t.Fatalf("ApplyClicks(mixed) = %d, %v; want 1, nil", n, err)
			}

			total, err := s.ClickTotal(ctx, "abc1234")
			if want := int64(3 + 2 + 1 + 4 + 78 + 1); err != nil || total != want {
				t.Errorf("ClickTotal = %d, %v; want %d", total, err, want)
			}
			st, err := s.ClickStats(ctx, "abc1234", day.Add(10*time.Hour+30*time.Minute), day.Add(24*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			want := clicks.Stats{Code: "abc1234", Total: 7, People: 4, Bots: 3,
				Hourly: []link.HourlyClicks{
					{Hour: day.Add(10 * time.Hour), People: 3, Bots: 2},
					{Hour: day.Add(11 * time.Hour), People: 1, Bots: 1},
				},
				Referrers: []clicks.ReferrerClicks{{Host: "a.example", Count: 3}, {Host: "b.example", Count: 1}},
				AllTime:   &clicks.Totals{Total: 89, People: 86, Bots: 3},
			}
			if !reflect.DeepEqual(st, want) {
				t.Errorf("ClickStats(day) =\n%+v\nwant\n%+v", st, want)
			}
			st, err = s.ClickStats(ctx, "abc1234", day.Add(-72*time.Hour), day.Add(72*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if st.Total != 89 || len(st.Referrers) != clicks.TopReferrers || st.Referrers[0] != (clicks.ReferrerClicks{Host: "h11.example", Count: 12}) ||
				st.Referrers[1] != (clicks.ReferrerClicks{Host: "h10.example", Count: 11}) || st.Referrers[9] != (clicks.ReferrerClicks{Host: "h03.example", Count: 4}) {
				t.Errorf("ClickStats(week) total %d referrers %+v", st.Total, st.Referrers)
			}
			if st.Referrers[7] != (clicks.ReferrerClicks{Host: "b.example", Count: 5}) {
				t.Errorf("ClickStats(week) referrer 8 = %+v, want b.example 5", st.Referrers[7])
			}
			st, err = s.ClickStats(ctx, "nothere", day, day.Add(time.Hour))
			if err != nil || st.Total != 0 || st.Hourly == nil || st.Referrers == nil || len(st.Hourly)+len(st.Referrers) != 0 {
				t.Errorf("ClickStats(unknown) = %+v, %v", st, err)
			}
		})
	}
}

// Concurrent applies of overlapping batches count every batch exactly once.
func TestClickSinkConcurrentApply(t *testing.T) {
	for name, open := range testClickSinks(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			at := time.Now().UTC()
			const batches, per = 120, 10
			var wg sync.WaitGroup
			for w := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Every worker applies every batch, in a different order and grouping.
					for i := range batches {
						j := (i + w*25) % batches
						clickList := make([]clicks.Click, per)
						for k := range clickList {
							clickList[k] = clicks.Click{Code: fmt.Sprintf("code%d", j%7), At: at, Referrer: "r.example", Class: clicks.UAClass(k % 3)}
						}
						if _, err := s.ApplyClicks(context.Background(), []clicks.Batch{{ID: fmt.Sprintf("b-%d", j), Clicks: clickList}}); err != nil {
							t.Errorf("ApplyClicks: %v", err)
							return
						}
					}
				}()
			}
			wg.Wait()
			var total int64
			for c := range 7 {
				n, err := s.ClickTotal(context.Background(), fmt.Sprintf("code%d", c))
				if err != nil {
					t.Fatal(err)
				}
				total += n
			}
			if total != batches*per {
				t.Errorf("total = %d, want %d", total, batches*per)
			}
		})
	}
}
