package shortener

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// dimMix returns n clicks on code at day (spread over its hours) drawn
// from a known mix of dimension values, and the count per dimension and
// Value they must give ("" counted as unknown).
func dimMix(code string, day time.Time, n, seed int) ([]clicks.Click, map[string]map[string]int64) {
	countries := []string{"FR", "US", "", "DE"}
	regions := []string{"FR-IDF", "US-CA", "", ""}
	cities := []string{"Paris", "San José", "", "Berlin"}
	devices := []string{clicks.DeviceDesktop, clicks.DeviceMobile, clicks.DeviceTablet}
	oses := []string{"windows", "ios", "android", "linux", ""}
	browsers := []string{"chrome", "firefox", "safari"}
	rules := []string{"iPhone ✓", "rule-2", ""}
	variants := []string{"a", "b", "", "a"}
	want := map[string]map[string]int64{}
	var clickList []clicks.Click
	for i := range n {
		j := i + seed
		c := clicks.Click{Code: code, At: day.Add(time.Duration(j%24)*time.Hour + time.Duration(i)*time.Second), Class: clicks.UAClass(j % 3),
			Country: countries[j%4], Region: regions[j%4], City: cities[(j/2)%4],
			Device: devices[j%3], OS: oses[j%5], Browser: browsers[(j/3)%3], Rule: rules[j%3], Variant: variants[(j/2)%4]}
		clickList = append(clickList, c)
		for d, v := range clicks.ClickDims(c) {
			if want[clicks.ClickDimensions[d]] == nil {
				want[clicks.ClickDimensions[d]] = map[string]int64{}
			}
			if v != "" { // no rule, no variant: not counted
				want[clicks.ClickDimensions[d]][v]++
			}
		}
	}
	return clickList, want
}

// breakdownOf reads every stored dimension of code over [from, to) as maps.
func breakdownOf(t *testing.T, s clicks.Sink, code string, from, to time.Time) map[string]map[string]int64 {
	t.Helper()
	got := map[string]map[string]int64{}
	for _, dim := range clicks.ClickDimensions {
		entries, err := s.ClickBreakdown(context.Background(), code, dim, from, to, clicks.MaxBreakdownLimit)
		if err != nil {
			t.Fatalf("ClickBreakdown(%s): %v", dim, err)
		}
		for _, e := range entries {
			if got[dim] == nil {
				got[dim] = map[string]int64{}
			}
			got[dim][e.Value] += e.Clicks
		}
	}
	return got
}

// Each click counts once under each dimension, per UTC day, on both
// stores; a batch applied again changes nothing; a range reads its days.
func TestClickSinkDims(t *testing.T) {
	for name, open := range testClickSinks(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
			first, want1 := dimMix("dims1", day, 240, 0)
			second, want2 := dimMix("dims1", day.Add(24*time.Hour), 120, 7)
			for range 2 {
				if _, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "d1", Clicks: first}, {ID: "d2", Clicks: second}}); err != nil {
					t.Fatal(err)
				}
			}
			if got := breakdownOf(t, s, "dims1", day, day.Add(24*time.Hour)); !reflect.DeepEqual(got, want1) {
				t.Errorf("first day = %v, want %v", got, want1)
			}
			both := want1
			for dim, m := range want2 {
				for v, n := range m {
					both[dim][v] += n
				}
			}
			if got := breakdownOf(t, s, "dims1", day.Add(time.Hour), day.Add(25*time.Hour)); !reflect.DeepEqual(got, both) {
				t.Errorf("both days = %v, want %v", got, both)
			}
			top, err := s.ClickBreakdown(ctx, "dims1", clicks.DimCountry, day, day.Add(48*time.Hour), 2)
			if err != nil {
				t.Fatal(err)
			}
			var wantTop []clicks.BreakdownEntry
			for v, n := range both[clicks.DimCountry] {
				wantTop = append(wantTop, clicks.BreakdownEntry{Value: v, Clicks: n})
			}
			slices.SortFunc(wantTop, func(a, b clicks.BreakdownEntry) int {
				return cmp.Or(cmp.Compare(b.Clicks, a.Clicks), strings.Compare(a.Value, b.Value))
			})
			wantTop = wantTop[:2]
			if !reflect.DeepEqual(top, wantTop) {
				t.Errorf("top 2 countries = %v, want %v", top, wantTop)
			}
			if got := breakdownOf(t, s, "dims1", day.Add(-48*time.Hour), day); len(got) != 0 {
				t.Errorf("days before = %v, want nothing", got)
			}
		})
	}
}

// Four instances count the same batches at once, each batch from every
// instance, with more cities than the cap: every dimension counts each
// batch once, exactly limit cities get rows and the rest is in "other".
func TestClickDimsExactlyOnceConcurrent(t *testing.T) {
	const limit, writers, batches, per = 3, 4, 30, 20
	for name, open := range cappedSinks(limit, writers) {
		t.Run(name, func(t *testing.T) {
			sinks := open(t)
			ctx := context.Background()
			day := clicks.DayFloor(time.Now()).Add(-24 * time.Hour)
			var all []clicks.Batch
			wantCities := int64(0)
			for b := range batches {
				clickList := make([]clicks.Click, per)
				for i := range clickList {
					clickList[i] = clicks.Click{Code: "dimsx", At: day.Add(time.Duration(b) * time.Minute), Class: clicks.UAClass(i % 3),
						Country: "NL", Device: clicks.DeviceMobile, City: fmt.Sprintf("City %d", (b*per+i)%11)}
				}
				wantCities += per
				all = append(all, clicks.Batch{ID: fmt.Sprintf("x-%d", b), Clicks: clickList})
			}
			var wg sync.WaitGroup
			for w, s := range sinks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range all {
						b := all[(i+w*7)%len(all)]
						if _, err := s.ApplyClicks(ctx, []clicks.Batch{b}); err != nil {
							t.Errorf("ApplyClicks: %v", err)
							return
						}
					}
				}()
			}
			wg.Wait()
			got := breakdownOf(t, sinks[0], "dimsx", day, day.Add(24*time.Hour))
			if got[clicks.DimCountry]["NL"] != batches*per || got[clicks.DimDevice][clicks.DeviceMobile] != batches*per || got[clicks.DimOS][clicks.UnknownDim] != batches*per {
				t.Errorf("country/device/os = %v %v %v, want %d each", got[clicks.DimCountry], got[clicks.DimDevice], got[clicks.DimOS], batches*per)
			}
			var named, sum int64
			for v, n := range got[clicks.DimCity] {
				if v != clicks.OtherReferrer {
					named++
				}
				sum += n
			}
			if named != limit || sum != wantCities {
				t.Errorf("cities = %v: %d named (want %d), %d clicks (want %d)", got[clicks.DimCity], named, limit, sum, wantCities)
			}
		})
	}
}

// Retention prunes dimension rows (and their named-value counts) dated
// before its cutoff, as it prunes referrers; later days stay.
func TestClickDimsRetention(t *testing.T) {
	for name, open := range cappedSinks(2, 1) {
		t.Run(name, func(t *testing.T) {
			s := open(t)[0]
			ctx := context.Background()
			day := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
			var clickList []clicks.Click
			for d := range 3 {
				for _, c := range []string{"FR", "US", "DE"} {
					clickList = append(clickList, clicks.Click{Code: "dimsr", At: day.Add(time.Duration(d)*24*time.Hour + time.Hour), Country: c})
				}
			}
			if _, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "r", Clicks: clickList}}); err != nil {
				t.Fatal(err)
			}
			cut := day.Add(48 * time.Hour)
			pruneAll(t, s, clicks.ClickCutoffs{Hourly: cut, Daily: cut}, 2)
			got := breakdownOf(t, s, "dimsr", day, day.Add(72*time.Hour))
			want := map[string]int64{"DE": 1, clicks.OtherReferrer: 1, "FR": 1} // the third day: DE and FR named, US past the cap of 2
			if !reflect.DeepEqual(got[clicks.DimCountry], want) {
				t.Errorf("countries after pruning = %v, want %v", got[clicks.DimCountry], want)
			}
			// A new value on a pruned day would take a place again: the day's count went too.
			if _, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "r2", Clicks: []clicks.Click{{Code: "dimsr", At: day.Add(time.Hour), Country: "IT"}}}}); err != nil {
				t.Fatal(err)
			}
			if got := breakdownOf(t, s, "dimsr", day, day.Add(time.Hour)); got[clicks.DimCountry]["IT"] != 1 {
				t.Errorf("pruned day, new value = %v, want IT counted", got[clicks.DimCountry])
			}
		})
	}
}
