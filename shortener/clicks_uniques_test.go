package shortener

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// Ten thousand distinct visitors, in batches merged into the stored
// sketch as the sinks do, then merged across days: within 2%, for
// several deterministic seeds; a visitor seen again is not counted twice.
func TestVisitorSketchAccuracy(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		salt := make([]byte, 32)
		binary.BigEndian.PutUint64(salt, rng.Uint64())
		var stored []byte
		var hashes []uint64
		for i := range 10000 {
			hashes = append(hashes, clicks.VisitorHash(salt, "198.51.100."+itoa(int64(i%256))+"/"+itoa(int64(i)), "UA"))
			if len(hashes) == 500 {
				var err error
				if stored, err = clicks.AddVisitors(stored, append(hashes, hashes[:100]...)); err != nil { // 100 repeat visitors
					t.Fatal(err)
				}
				hashes = hashes[:0]
			}
		}
		got := clicks.MergeVisitors([][]byte{stored, stored}) // merge is idempotent
		if dev := math.Abs(float64(got)-10000) / 10000; dev > 0.02 {
			t.Errorf("seed %d: %d distinct visitors estimated as %d (%.2f%%), want within 2%%", seed, 10000, got, 100*dev)
		}
	}
	v := func(a string) uint64 { return clicks.VisitorHash([]byte("salt"), a, "UA") }
	small, _ := clicks.AddVisitors(nil, []uint64{v("a"), v("b"), v("c"), v("c"), v("b")})
	if got := clicks.MergeVisitors([][]byte{small}); got != 3 {
		t.Errorf("3 visitors while sparse = %d, want exactly 3", got)
	}
}

// Any stored bytes decode or fail, never panic; a sketch that decodes
// re-encodes to one with the same estimate; merging is commutative and
// idempotent, and a merge estimates within the bound of its exact union.
func FuzzVisitorSketch(f *testing.F) {
	seed, _ := clicks.AddVisitors(nil, []uint64{1, 2, 3})
	f.Add(seed, []byte("abcdefgh12345678"))
	f.Add([]byte{2, 14, 0, 0, 0, 0, 0, 0}, []byte{})
	f.Add([]byte{1, 14, 0, 1, 255, 255, 255, 255}, []byte("x"))
	f.Fuzz(func(t *testing.T, stored, more []byte) {
		if sk, err := clicks.DecodeVisitorSketch(stored); err == nil {
			b, err := sk.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			again, err := clicks.DecodeVisitorSketch(b)
			if err != nil || again.Estimate() != sk.Estimate() {
				t.Fatalf("round trip: %v, estimate %d then %d", err, sk.Estimate(), again.Estimate())
			}
		}
		var ha, hb []uint64
		exact := map[uint64]bool{}
		for i := 0; i+8 <= len(more); i += 8 {
			h := binary.LittleEndian.Uint64(more[i:]) * 0x9E3779B97F4A7C15
			if i%16 == 0 {
				ha = append(ha, h)
			} else {
				hb = append(hb, h)
			}
			exact[h] = true
		}
		a, _ := clicks.AddVisitors(stored, ha) // a bad stored value restarts
		b, _ := clicks.AddVisitors(nil, hb)
		ab, ba := clicks.MergeVisitors([][]byte{a, b}), clicks.MergeVisitors([][]byte{b, a})
		if ab != ba || clicks.MergeVisitors([][]byte{a, a}) != clicks.MergeVisitors([][]byte{a}) {
			t.Fatalf("merge: a∪b %d, b∪a %d; a∪a %d, a %d", ab, ba, clicks.MergeVisitors([][]byte{a, a}), clicks.MergeVisitors([][]byte{a}))
		}
		if _, err := clicks.DecodeVisitorSketch(stored); err != nil && len(exact) <= 100 {
			if d := math.Abs(float64(ab) - float64(len(exact))); d > 1+0.05*float64(len(exact)) {
				t.Fatalf("%d distinct hashes estimated %d", len(exact), ab)
			}
		}
	})
}

// The sinks merge each batch's visitors into the day's sketch in the
// click transaction: bots and unknown visitors are not counted, a batch
// ID applied before is skipped (even resent with other clicks), days
// merge into visitor-days, and the retention's roll-up keeps the sketch.
func TestClickSinkUniques(t *testing.T) {
	for name, open := range testClickSinks(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := t.Context()
			dayA := time.Date(2026, 6, 10, 0, 0, 0, 0, time.UTC)
			salt := []byte("salt of the test")
			visits := func(day time.Time, from, to int, class clicks.UAClass) []clicks.Click {
				var cs []clicks.Click
				for i := from; i < to; i++ {
					cs = append(cs, clicks.Click{Code: "uniq", At: day.Add(time.Duration(i%24) * time.Hour), Class: class,
						Visitor: clicks.VisitorHash(salt, day.Format(time.DateOnly)+itoa(int64(i)), "UA")})
				}
				return cs
			}
			batches := []clicks.Batch{
				{ID: "v-1", Clicks: visits(dayA, 0, 600, clicks.ClassBrowser)},
				{ID: "v-2", Clicks: append(visits(dayA, 500, 1000, clicks.ClassOther), visits(dayA, 0, 100, clicks.ClassBrowser)...)},
				{ID: "v-3", Clicks: append(visits(dayA, 5000, 5300, clicks.ClassBot), clicks.Click{Code: "uniq", At: dayA})},
				{ID: "v-4", Clicks: visits(dayA.AddDate(0, 0, 1), 0, 500, clicks.ClassBrowser)},
			}
			if _, err := s.ApplyClicks(ctx, batches); err != nil {
				t.Fatal(err)
			}
			if n, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "v-1", Clicks: visits(dayA, 7000, 8000, clicks.ClassBrowser)}}); err != nil || n != 0 {
				t.Fatalf("replayed batch: applied %d, %v; want 0", n, err)
			}
			within := func(what string, got, want int64) {
				t.Helper()
				if math.Abs(float64(got-want)) > 0.02*float64(want) {
					t.Errorf("%s: uniques %d, want %d within 2%%", what, got, want)
				}
			}
			check := func(when string) {
				within(when+", day A", clickTotalsOf(t, s, "uniq", dayA.Add(time.Hour), dayA.Add(2*time.Hour)).Uniques, 1000)
				two := clickTotalsOf(t, s, "uniq", dayA, dayA.AddDate(0, 0, 2))
				within(when+", days A and B (visitor-days)", two.Uniques, 1500)
				if two.Total != 600+600+301+500 || two.Bots != 300 {
					t.Errorf("%s: total %d bots %d, want 2001 and 300", when, two.Total, two.Bots)
				}
				// The daily buckets of the timeseries: each day's own sketch.
				spec := clicks.SeriesSpec{Granularity: clicks.GranularityDay, Loc: time.UTC}
				points := spec.Series(append(two.Hourly, clicks.DailyAsHours(two.Daily)...), dayA, dayA.AddDate(0, 0, 2))
				spec.WithUniques(points, two.Visitors)
				if len(two.Visitors) != 2 || len(points) != 2 || points[0].Uniques == nil || points[1].Uniques == nil {
					t.Fatalf("%s: %d daily sketches, points %+v, want 2 days with uniques", when, len(two.Visitors), points)
				}
				within(when+", day A's bucket", *points[0].Uniques, 1000)
				within(when+", day B's bucket", *points[1].Uniques, 500)
			}
			check("counted")
			pruneAll(t, s, clicks.ClickCutoffs{Hourly: dayA.AddDate(0, 0, 3), Daily: dayA.AddDate(0, 0, -1)}, 50)
			check("rolled up")
			if st := clickTotalsOf(t, s, "uniq", dayA.AddDate(0, 0, 3), dayA.AddDate(0, 0, 4)); st.Uniques != 0 {
				t.Errorf("a day without visitors: uniques %d", st.Uniques)
			}
		})
	}
}

// The visitor hash travels through the Redis stream to the sink, on two
// recorders sharing the stream.
func TestClicksUniquesThroughStream(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	sink := newTestPostgresClickSink(t)
	recs := []*clicks.Recorder{
		newTestRecorder(t, clicks.Config{Sink: sink, Redis: rdb, KeyPrefix: prefix, BatchInterval: 10 * time.Millisecond}),
		newTestRecorder(t, clicks.Config{Sink: sink, Redis: rdb, KeyPrefix: prefix, BatchInterval: 10 * time.Millisecond}),
	}
	now := time.Now().UTC()
	salt := []byte("stream salt")
	for i := range 2000 {
		recs[i%2].Record(clicks.Click{Code: testClickCodes[0], At: now, Class: clicks.ClassBrowser,
			Visitor: clicks.VisitorHash(salt, itoa(int64(i%1500)), "UA")})
	}
	eventually(t, 20*time.Second, "2000 clicks counted", func() bool {
		n, err := sink.ClickTotal(t.Context(), testClickCodes[0])
		return err == nil && n == 2000
	})
	st := clickTotalsOf(t, sink, testClickCodes[0], now, now.Add(time.Second))
	if math.Abs(float64(st.Uniques)-1500) > 30 {
		t.Errorf("uniques of 1500 visitors through the stream = %d, want within 2%%", st.Uniques)
	}
}
