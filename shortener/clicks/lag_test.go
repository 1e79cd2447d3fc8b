package clicks

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The collector reports, over the live recorders: the stream length
// summed over distinct streams (recorders of one stream agree), the
// largest lag (a stream sample or a flush not accepted), the oldest GeoIP
// build; a gauge no recorder has a value for is left out.
func TestPipelineGaugesCollect(t *testing.T) {
	now := time.Now()
	p := newPipelineGauges()
	collect := func() map[string]float64 {
		t.Helper()
		ch := make(chan prometheus.Metric, 8)
		p.Collect(ch)
		close(ch)
		got := map[string]float64{}
		for m := range ch {
			var d dto.Metric
			if err := m.Write(&d); err != nil {
				t.Fatal(err)
			}
			got[m.Desc().String()] = d.GetGauge().GetValue()
		}
		return got
	}
	if got := collect(); len(got) != 0 {
		t.Errorf("no recorder: %v, want nothing", got)
	}
	sample := func(stream string, n, lagMs int64) *Recorder {
		r := &Recorder{Stream: stream}
		r.lag.streamLen.Store(n)
		r.lag.streamLagMs.Store(lagMs)
		r.lag.sampled.Store(true)
		p.add(r)
		return r
	}
	sample("a:clicks", 7, 1500)
	sample("a:clicks", 5, 900) // the same stream, sampled at another time
	sample("b:clicks", 3, 200)
	flushing := &Recorder{Stream: "c:clicks", Geo: &GeoIP{}}
	flushing.lag.sending.Store(now.Add(-time.Minute).UnixNano())
	flushing.Geo.built.Store(1_700_000_000)
	p.add(flushing)
	older := &Recorder{Geo: &GeoIP{}}
	older.Geo.built.Store(1_600_000_000)
	p.add(older)

	got := collect()
	if v := got[p.streamLen.String()]; v != 10 {
		t.Errorf("stream length %v, want 7 (a) + 3 (b)", v)
	}
	if v := got[p.lag.String()]; v < 60 || v > 70 {
		t.Errorf("lag %v, want the minute-old flush's", v)
	}
	if v := got[p.geoBuilt.String()]; v != 1_600_000_000 {
		t.Errorf("GeoIP build %v, want the oldest", v)
	}
	flushing.lag.sending.Store(0)
	p.remove(older)
	got = collect()
	if v := got[p.lag.String()]; v != 1.5 {
		t.Errorf("flush accepted: lag %v, want the stream's 1.5s", v)
	}
	if v := got[p.geoBuilt.String()]; v != 1_700_000_000 {
		t.Errorf("older file's recorder closed: GeoIP build %v, want 1700000000", v)
	}
}

func TestOldestClick(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	batches := []Batch{{Clicks: []Click{{At: t0.Add(time.Second)}, {At: t0}}}, {Clicks: []Click{{At: t0.Add(2 * time.Second)}}}}
	if got := oldestClick(batches); got != t0.UnixNano() {
		t.Errorf("oldestClick = %v, want %v", got, t0.UnixNano())
	}
	if got := oldestClick(nil); got != 0 {
		t.Errorf("oldestClick(nil) = %v, want 0", got)
	}
}
