package shortener

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// TestClickDimensionsExactlyOnce is issue 17's exactly-once acceptance
// for every dimension: 3,000 clicks from a known mix of countries (a
// GeoIP file written here), devices and 600 visitors over two instances,
// one killed after a commit and before its XACK and the other before its
// commit, recovered by a third: every country, device, browser and source
// count is exact, and so are the targeting rule and variant counts
// (issue 35: a click without a rule or variant counted in neither), and
// the uniques are the 600 visitors (within 2%), each rule's and variant's
// the visitors who had it, on PostgreSQL and in the embedded file.
func TestClickDimensionsExactlyOnce(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		dimensionsExactlyOnce(t, store.NewPostgresClickSink(testClickPool(t, testenv.Postgres(t)), 0))
	})
	t.Run("embedded", func(t *testing.T) {
		sink, err := clickSinkFor(embeddedStore(t), 0)
		if err != nil {
			t.Fatal(err)
		}
		dimensionsExactlyOnce(t, sink)
	})
}

func dimensionsExactlyOnce(t *testing.T, sink clicks.Sink) {
	rdb, prefix := testenv.Redis(t)
	geo := filepath.Join(t.TempDir(), "city.mmdb")
	writeGeoDB(t, geo, "GeoLite2-City", []geoNet{
		{"198.51.100.0/24", cityRecord("US", "US-CA", "San Jose")},
		{"203.0.113.0/24", cityRecord("DE", "DE-BE", "Berlin")},
		{"2001:db8::/32", cityRecord("JP", "JP-13", "Tokyo")},
	})
	uas := []struct{ ua, device, browser string }{
		{"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", clicks.DeviceDesktop, "firefox"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", clicks.DeviceMobile, "safari"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", clicks.DeviceDesktop, "chrome"},
	}
	var afterCommit, beforeCommit atomic.Int32
	cfg := func() clicks.Config {
		return clicks.Config{Sink: sink, Redis: rdb, KeyPrefix: prefix, ClaimMinIdle: 300 * time.Millisecond, GeoIP: geo, BatchSize: 50}
	}
	ca, cb := cfg(), cfg()
	ca.CrashAfterApply = func([]clicks.Batch) bool { return afterCommit.Add(1) == 1 }
	cb.CrashBeforeApply = func([]clicks.Batch) bool { return beforeCommit.Add(1) == 1 }
	a, b := newTestRecorder(t, ca), newTestRecorder(t, cb)

	code := testClickCodes[0]
	want := map[string]map[string]int64{clicks.DimCountry: {}, clicks.DimDevice: {}, clicks.DimBrowser: {}, clicks.DimSource: {},
		clicks.DimRule: {}, clicks.DimVariant: {}}
	// The rule and variant a redirect chose: none, a rule's split, a
	// rule without one, the link-level split.
	targets := []struct{ rule, variant string }{{"", ""}, {"French", "a"}, {"French", "b"}, {"mobile", ""}, {"", "x"}}
	people := map[string]map[string]map[int]bool{clicks.DimRule: {}, clicks.DimVariant: {}} // dim, value: visitors
	met := func(dim, value string, v int) {
		if people[dim][value] == nil {
			people[dim][value] = map[int]bool{}
		}
		people[dim][value][v] = true
	}
	click := func(i int) clicks.Click {
		v := i % 600 // the visitor: an address and a user agent
		var addr netip.Addr
		switch v % 3 {
		case 0:
			addr = netip.AddrFrom4([4]byte{198, 51, 100, byte(v / 3)})
			want[clicks.DimCountry]["US"]++
		case 1:
			addr = netip.AddrFrom4([4]byte{203, 0, 113, byte(v / 3)})
			want[clicks.DimCountry]["DE"]++
		default:
			addr = netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", v))
			want[clicks.DimCountry]["JP"]++
		}
		u := uas[v%len(uas)]
		want[clicks.DimDevice][u.device]++
		want[clicks.DimBrowser][u.browser]++
		c := clicks.Click{Code: code, At: time.Now(), Class: clicks.ClassBrowser, Addr: addr, UA: u.ua, QR: i%5 == 0}
		want[clicks.DimSource][clicks.ClickSourceDim(c.QR)]++
		tg := targets[i%len(targets)]
		c.Rule, c.Variant = tg.rule, tg.variant
		if tg.rule != "" {
			want[clicks.DimRule][tg.rule]++
			met(clicks.DimRule, tg.rule, v)
		}
		if tg.variant != "" {
			want[clicks.DimVariant][tg.variant]++
			met(clicks.DimVariant, tg.variant, v)
		}
		return c
	}
	clickList := make([]clicks.Click, 3000)
	for i := range clickList {
		clickList[i] = click(i)
	}
	send := func(recs []*clicks.Recorder, from, to int) {
		var wg sync.WaitGroup
		for w := range 30 {
			wg.Go(func() {
				for i := from + w; i < to; i += 30 {
					recs[i%len(recs)].Record(clickList[i])
				}
			})
		}
		wg.Wait()
	}
	send([]*clicks.Recorder{a, b}, 0, 1500)
	deadline := time.Now().Add(20 * time.Second)
	for afterCommit.Load() == 0 || beforeCommit.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("consumers not killed: after-commit hook %d, before-commit hook %d", afterCommit.Load(), beforeCommit.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := newTestRecorder(t, cfg())
	send([]*clicks.Recorder{a, b, c}, 1500, 3000)
	waitTotal(t, sink, 3000, 60*time.Second)
	if c.Replayed.Load() == 0 {
		t.Error("the batch committed before the kill was not replayed: the after-commit crash was not exercised")
	}
	ctx := context.Background()
	from, to := time.Now().Add(-48*time.Hour), time.Now().Add(48*time.Hour)
	for dim, w := range want {
		bd, err := sink.ClickBreakdown(ctx, code, dim, from, to, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []clicks.BreakdownEntry // the values and their clicks
		for _, e := range bd {
			got = append(got, clicks.BreakdownEntry{Value: e.Value, Clicks: e.Clicks})
			if n := int64(len(people[dim][e.Value])); clicks.HasUniques(dim) && (e.Uniques == nil || math.Abs(float64(*e.Uniques-n)) > 0.02*float64(n)) {
				t.Errorf("%s %q: uniques %v, want %d within 2%%", dim, e.Value, e.Uniques, n)
			}
		}
		var wl []clicks.BreakdownEntry
		for v, n := range w {
			wl = append(wl, clicks.BreakdownEntry{Value: v, Clicks: n})
		}
		sort.Slice(wl, func(i, j int) bool {
			return wl[i].Clicks > wl[j].Clicks || wl[i].Clicks == wl[j].Clicks && wl[i].Value < wl[j].Value
		})
		if !reflect.DeepEqual(got, wl) {
			t.Errorf("%s: %+v, want %+v", dim, got, wl)
		}
	}
	st, err := sink.ClickStats(ctx, code, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if st.Uniques < 588 || st.Uniques > 612 {
		t.Errorf("uniques %d, want 600 within 2%%", st.Uniques)
	}
	for _, r := range []*clicks.Recorder{a, b, c} {
		closeRecorder(t, r)
	}
	assertStreamDrained(t, rdb, prefix)
}
