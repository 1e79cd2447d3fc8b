package clicks

import (
	"context"
	_ "embed"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// defaultStreamSample is how often a consumer samples the click stream's
// length and the age of its oldest entry (Config.StreamSample).
const defaultStreamSample = 5 * time.Second

//go:embed scripts/clicks_lag.lua
var clicksLagLua string

// clicksLagScript reads the stream's length and its oldest entry's age by
// Redis's clock, in one call on the stream's node.
var clicksLagScript = redis.NewScript(clicksLagLua)

// lagState is what a recorder keeps for the gauges read per scrape:
// written by its writer (sending) and its consumer (the stream sample).
type lagState struct {
	// sending: Unix ns of the oldest click in the delivery the writer is
	// sending or retrying (0: none)
	sending atomic.Int64
	// streamLen, streamLagMs: the consumer's last sample; sampled: there
	// is one
	streamLen, streamLagMs atomic.Int64
	sampled                atomic.Bool
}

// sampleStream reads the stream's length and its oldest entry's age into
// r.lag. Consumer only, every Config.StreamSample.
func (r *Recorder) sampleStream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res, err := clicksLagScript.Run(ctx, r.Cfg.Redis, []string{r.Stream}).Int64Slice()
	if err != nil {
		return fmt.Errorf("sampling the click stream: %w", err)
	}
	if len(res) != 2 || res[0] < 0 || res[1] < 0 {
		return fmt.Errorf("click lag script: unexpected reply %v", res)
	}
	r.lag.streamLen.Store(res[0])
	r.lag.streamLagMs.Store(res[1])
	r.lag.sampled.Store(true)
	return nil
}

// lagSeconds is the age of the oldest click r knows is not counted yet:
// the stream's oldest entry at the last sample, or the oldest click of a
// delivery the writer has not got accepted yet, whichever is older.
func (r *Recorder) lagSeconds(now time.Time) float64 {
	lag := time.Duration(r.lag.streamLagMs.Load()) * time.Millisecond
	if at := r.lag.sending.Load(); at != 0 {
		lag = max(lag, now.Sub(time.Unix(0, at)))
	}
	return max(lag, 0).Seconds()
}

// oldestClick returns the Unix ns of the oldest click of batches (0: none).
func oldestClick(batches []Batch) int64 {
	var oldest int64
	for _, b := range batches {
		for _, c := range b.Clicks {
			if at := c.At.UnixNano(); oldest == 0 || at < oldest {
				oldest = at
			}
		}
	}
	return oldest
}

// pipelineGauges is the collector of the click pipeline's gauges read per
// scrape from the live recorders of a registry: the stream's length and
// lag and the GeoIP file's build time. Recorders join at NewRecorder and
// leave at Close; the request path never touches it.
type pipelineGauges struct {
	streamLen, lag, geoBuilt *prometheus.Desc

	mu   sync.Mutex
	recs map[*Recorder]struct{}
}

func newPipelineGauges() *pipelineGauges {
	name := func(n string) string { return prometheus.BuildFQName("caddy", "shortener", n) }
	return &pipelineGauges{
		streamLen: prometheus.NewDesc(name("clicks_stream_length"),
			"Entries (batches of clicks) in the Redis click stream not yet counted by a consumer, sampled every 5s (XLEN; the sum over distinct streams).", nil, nil),
		lag: prometheus.NewDesc(name("clicks_lag_seconds"),
			"Age of the oldest click known not to be counted yet: the click stream's oldest entry (sampled every 5s) or the oldest click of a flush not yet accepted.", nil, nil),
		geoBuilt: prometheus.NewDesc(name("geoip_build_timestamp_seconds"),
			"Build time (Unix seconds, from its metadata) of the loaded GeoIP file (the oldest, with several).", nil, nil),
		recs: map[*Recorder]struct{}{},
	}
}

func (p *pipelineGauges) add(r *Recorder) {
	p.mu.Lock()
	p.recs[r] = struct{}{}
	p.mu.Unlock()
}

func (p *pipelineGauges) remove(r *Recorder) {
	p.mu.Lock()
	delete(p.recs, r)
	p.mu.Unlock()
}

func (p *pipelineGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- p.streamLen
	ch <- p.lag
	ch <- p.geoBuilt
}

// Collect reports each gauge that a live recorder has a value for: the
// length per stream (the recorders of one stream agree), the largest lag,
// the oldest GeoIP build.
func (p *pipelineGauges) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	streams := map[string]int64{}
	var lag float64
	var built int64
	p.mu.Lock()
	n := len(p.recs)
	for r := range p.recs {
		if r.lag.sampled.Load() {
			streams[r.Stream] = max(streams[r.Stream], r.lag.streamLen.Load())
		}
		lag = max(lag, r.lagSeconds(now))
		if r.Geo != nil {
			if b := r.Geo.built.Load(); b > 0 && (built == 0 || b < built) {
				built = b
			}
		}
	}
	p.mu.Unlock()
	if len(streams) > 0 {
		var total int64
		for _, l := range streams {
			total += l
		}
		ch <- prometheus.MustNewConstMetric(p.streamLen, prometheus.GaugeValue, float64(total))
	}
	if n > 0 {
		ch <- prometheus.MustNewConstMetric(p.lag, prometheus.GaugeValue, lag)
	}
	if built > 0 {
		ch <- prometheus.MustNewConstMetric(p.geoBuilt, prometheus.GaugeValue, float64(built))
	}
}
