package shortener

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// downSink fails every ApplyClicks while down is set.
type downSink struct {
	clicks.Sink
	down atomic.Bool
}

func (s *downSink) ApplyClicks(ctx context.Context, b []clicks.Batch) (int, error) {
	if s.down.Load() {
		return 0, errors.New("store down")
	}
	return s.Sink.ApplyClicks(ctx, b)
}

// gauges returns the click pipeline's gauges as reg exports them; a gauge
// with no series is absent.
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if g := m.GetGauge(); g != nil {
				out[mf.GetName()] = g.GetValue()
			}
		}
	}
	return out
}

// waitGauges waits until ok holds for reg's gauges and returns them.
func waitGauges(t *testing.T, reg *prometheus.Registry, what string, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		g := gauges(t, reg)
		if ok(g) {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s; gauges %v", what, g)
		}
	}
}

const (
	gaugeStreamLen = "caddy_shortener_clicks_stream_length"
	gaugeLag       = "caddy_shortener_clicks_lag_seconds"
	gaugeGeoBuilt  = "caddy_shortener_geoip_build_timestamp_seconds"
)

// With Redis, the stream's length and lag are what the consumers have not
// counted: while the store refuses, the entries stay and age (by Redis's
// clock); once it answers they are counted, deleted, and both go to 0.
func TestClicksStreamLagMetrics(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	sink := &downSink{Sink: newTestEmbeddedClickSink(t)}
	sink.down.Store(true)
	reg := prometheus.NewRegistry()
	rec := newTestRecorder(t, clicks.Config{Sink: sink, Redis: rdb, KeyPrefix: prefix, Registerer: reg,
		StreamSample: 20 * time.Millisecond})
	for i := range 3 {
		rec.Record(clicks.Click{Code: testClickCodes[i]})
	}
	g := waitGauges(t, reg, "the batch aged 300ms in the stream", func(g map[string]float64) bool {
		return g[gaugeStreamLen] >= 1 && g[gaugeLag] >= 0.3
	})
	xlen, err := rdb.XLen(context.Background(), prefix+":clicks").Result()
	if err != nil {
		t.Fatal(err)
	}
	if g[gaugeStreamLen] != float64(xlen) || g[gaugeLag] > 5 {
		t.Errorf("store down: stream length %v, lag %vs; want XLEN %d and a lag of about 0.3s", g[gaugeStreamLen], g[gaugeLag], xlen)
	}
	sink.down.Store(false)
	waitGauges(t, reg, "the stream drained", func(g map[string]float64) bool {
		return g[gaugeStreamLen] == 0 && g[gaugeLag] == 0
	})
	waitTotal(t, sink, 3, 10*time.Second)
	closeRecorder(t, rec)
	if g := gauges(t, reg); len(g) != 2 {
		t.Errorf("after Close: gauges %v, want only the buffered ones", g)
	}
}

// Without Redis, the lag is the age of the oldest click of a flush the
// store has not accepted; no stream, so no stream length.
func TestClicksFlushLagMetric(t *testing.T) {
	sink := &downSink{Sink: newTestEmbeddedClickSink(t)}
	sink.down.Store(true)
	reg := prometheus.NewRegistry()
	rec := newTestRecorder(t, clicks.Config{Sink: sink, Registerer: reg})
	g := gauges(t, reg)
	if _, ok := g[gaugeStreamLen]; ok || g[gaugeLag] != 0 {
		t.Errorf("nothing recorded: gauges %v, want a lag of 0 and no stream length", g)
	}
	rec.Record(clicks.Click{Code: "code0", At: time.Now().Add(-time.Minute)})
	rec.Record(clicks.Click{Code: "code1"})
	g = waitGauges(t, reg, "the flush retried", func(g map[string]float64) bool { return g[gaugeLag] >= 60 })
	if g[gaugeLag] > 70 {
		t.Errorf("a click a minute old not flushed: lag %vs, want about 60", g[gaugeLag])
	}
	sink.down.Store(false)
	waitGauges(t, reg, "the flush accepted", func(g map[string]float64) bool { return g[gaugeLag] == 0 })
	waitTotal(t, sink, 2, 10*time.Second)
}

// The GeoIP gauge is the loaded file's build time from its metadata, and
// follows a reload of the file.
func TestGeoIPBuildTimestampMetric(t *testing.T) {
	path := filepath.Join(t.TempDir(), "geo.mmdb")
	const built, rebuilt = 1_700_000_000, 1_760_000_000
	writeGeoDBBuilt(t, path, "GeoLite2-Country", countryNets("US"), built)
	reg := prometheus.NewRegistry()
	rec := newTestRecorder(t, clicks.Config{Sink: newTestEmbeddedClickSink(t), Registerer: reg, GeoIP: path, GeoIPPoll: time.Hour})
	if g := gauges(t, reg)[gaugeGeoBuilt]; g != built {
		t.Errorf("loaded: %s = %v, want %d", gaugeGeoBuilt, g, built)
	}
	writeGeoDBBuilt(t, path, "GeoLite2-Country", countryNets("NZ"), rebuilt)
	rec.Geo.Check()
	if g := gauges(t, reg)[gaugeGeoBuilt]; g != rebuilt {
		t.Errorf("reloaded: %s = %v, want %d", gaugeGeoBuilt, g, rebuilt)
	}
	closeRecorder(t, rec)
	if _, ok := gauges(t, reg)[gaugeGeoBuilt]; ok {
		t.Errorf("closed: %s still exported", gaugeGeoBuilt)
	}
}
