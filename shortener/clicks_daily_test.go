package shortener

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// pruneAll runs prune pages at cut until a pass is done.
func pruneAll(t *testing.T, s clicks.Sink, cut clicks.ClickCutoffs, page int) {
	t.Helper()
	for done := false; !done; {
		var err error
		if _, done, err = s.(clicks.ClickPruner).PruneClicks(context.Background(), cut, page); err != nil {
			t.Fatal(err)
		}
	}
}

func clickTotalsOf(t *testing.T, s clicks.Sink, code string, from, to time.Time) clicks.Stats {
	t.Helper()
	st, err := s.ClickStats(context.Background(), code, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Hourly counters past clicks_hourly_retention move to daily rollups
// (people and bots per UTC day, each click in exactly one of the two),
// rows past clicks_retention go, and the stats and their day series read
// both. A recorder's pruner at an injected clock does it in pages; a
// second pass changes nothing, and a late click to a rolled day is added
// to its rollup.
func TestClickHourlyRetentionRollsUp(t *testing.T) {
	for name, open := range testClickSinks(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			now := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
			day := func(d int) time.Time { return time.Date(2026, 6, d, 0, 0, 0, 0, time.UTC) }
			var rolled, gone []clicks.Click
			for h := range 24 {
				rolled = append(rolled, clicks.Click{Code: "roll", At: day(10).Add(time.Duration(h) * time.Hour), Class: clicks.UAClass(h % 3)})
				if h < 5 {
					gone = append(gone, clicks.Click{Code: "roll", At: day(4).Add(time.Duration(h) * time.Hour), Referrer: "r.example"})
				}
			}
			kept := []clicks.Click{{Code: "roll", At: day(13).Add(10 * time.Hour)}, {Code: "roll", At: day(13).Add(10*time.Hour + time.Minute), Class: clicks.ClassBot}}
			if _, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "d-1", Clicks: rolled[:10]}, {ID: "d-2", Clicks: rolled[10:]},
				{ID: "d-3", Clicks: gone}, {ID: "d-4", Clicks: kept}, {ID: "d-5", Clicks: []clicks.Click{{Code: "other", At: day(10)}}}}); err != nil {
				t.Fatal(err)
			}
			rec := newTestRecorder(t, clicks.Config{Sink: s, Retention: 10 * 24 * time.Hour, HourlyRetention: 3 * 24 * time.Hour,
				PruneDelay: time.Millisecond, PruneInterval: time.Hour, PrunePage: 7, Now: func() time.Time { return now }})
			cut := rec.PruneCutoffs()
			if cut.Hourly != day(12) || cut.Daily != day(5) {
				t.Fatalf("cutoffs = %+v, want hourly 2026-06-12, daily 2026-06-05", cut)
			}
			eventually(t, 20*time.Second, "the 24 rolled hours gone", func() bool {
				old := clickTotalsOf(t, s, "roll", day(4), day(5))
				return len(clickTotalsOf(t, s, "roll", day(10), day(11)).Hourly) == 0 && old.Total == 0 && len(old.Referrers) == 0
			})
			closeRecorder(t, rec)
			check := func(when string, people, bots int64) {
				t.Helper()
				st := clickTotalsOf(t, s, "roll", day(10).Add(5*time.Hour), day(10).Add(6*time.Hour))
				want := []clicks.DailyClicks{{Day: day(10), People: people, Bots: bots}}
				if fmt.Sprint(st.Daily) != fmt.Sprint(want) || len(st.Hourly) != 0 || st.Total != people+bots {
					t.Errorf("%s: an hour of the rolled day = %+v; want the whole day %+v (days past the hourly retention are whole)", when, st, want)
				}
				if st := clickTotalsOf(t, s, "roll", day(4), day(5)); st.Total != 0 || len(st.Daily) != 0 || len(st.Referrers) != 0 {
					t.Errorf("%s: a day past the retention = %+v, want nothing", when, st)
				}
				if st := clickTotalsOf(t, s, "roll", day(12), now); st.Total != 2 || st.Bots != 1 || len(st.Hourly) != 1 || len(st.Daily) != 0 {
					t.Errorf("%s: the kept hours = %+v, want 2 clicks in one hourly row", when, st)
				}
				if st := clickTotalsOf(t, s, "other", day(10), day(11)); st.Total != 1 || len(st.Daily) != 1 {
					t.Errorf("%s: another link's rolled day = %+v, want its click", when, st)
				}
				all := clickTotalsOf(t, s, "roll", day(1), now)
				series := clicks.SeriesSpec{Granularity: clicks.GranularityDay, Loc: time.UTC}.Series(append(all.Hourly, clicks.DailyAsHours(all.Daily)...), day(1), now)
				got := map[int]int64{}
				for _, p := range series {
					if p.Clicks != 0 {
						got[p.Start.Day()] = p.Clicks
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(map[int]int64{10: people + bots, 13: 2}) || all.Total != people+bots+2 {
					t.Errorf("%s: day series = %v (total %d), want day 10: %d, day 13: 2", when, got, all.Total, people+bots)
				}
				if all.AllTime == nil || all.AllTime.Total != people+bots+2+5 {
					t.Errorf("%s: all-time = %+v, want every click ever counted", when, all.AllTime)
				}
			}
			check("after the pass", 16, 8)
			pruneAll(t, s, cut, 3)
			check("after a second pass", 16, 8)
			if _, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "d-6", Clicks: []clicks.Click{{Code: "roll", At: day(10).Add(3 * time.Hour)}}}}); err != nil {
				t.Fatal(err)
			}
			pruneAll(t, s, cut, 3)
			check("after a late click", 17, 8)
		})
	}
}

// Before the hourly horizon, a series that needs hours (granularity hour,
// a tz) is refused, naming the parameter; whole UTC days are answered.
func TestClickStatsBeforeHourlyHorizon(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 42, 0, 0, time.UTC)
	h, _ := clickHandler(t, now, func(h *Handler) { h.ClicksHourlyRetention = caddy.Duration(3 * 24 * time.Hour) })
	code := create(t, h, `{"long_url":"https://example.com/landing"}`).Code
	base := "/api/links/" + code + "/stats?"
	var st clicks.StatsAnswer
	for _, q := range []string{"from=2026-11-26T00:00:00Z&granularity=hour", "from=2026-11-26T00:00:00Z&tz=Europe/Paris",
		"from=2026-11-01T00:00:00Z", "from=2026-11-01T00:00:00Z&granularity=month&tz=UTC"} {
		getJSON(t, h, base+q, http.StatusOK, &st)
	}
	for q, want := range map[string]string{
		"from=2026-11-25T23:00:00Z&granularity=hour": "granularity: hourly counters are kept from 2026-11-26T00:00:00Z",
		"from=2026-11-01T00:00:00Z&tz=Europe/Paris":  "tz: hourly counters are kept from 2026-11-26T00:00:00Z",
	} {
		w := serve(t, h, "GET", base+q, "", auth()...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), want) {
			t.Errorf("GET stats?%s = %d %s, want 400 naming %q", q, w.Code, w.Body, want)
		}
	}
}
