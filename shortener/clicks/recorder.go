package clicks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Defaults of click counting.
const (
	DefaultClicksBuffer          = 65536
	DefaultClicksBatch           = 500
	DefaultClicksInterval        = time.Second
	DefaultClicksStreamMaxLen    = 1000000
	DefaultClicksClaimIdle       = time.Minute
	DefaultClicksBufferBytes     = 8 << 20
	DefaultClicksStreamBytes     = 128 << 20
	DefaultClicksReferrers       = 100
	DefaultClicksRetention       = 400 * 24 * time.Hour
	DefaultClicksHourlyRetention = 90 * 24 * time.Hour
)

// Config configures a Recorder.
type Config struct {
	// Sink receives the clicks (required).
	Sink Sink
	// Redis, if set, carries clicks through the stream <KeyPrefix>:clicks
	// and a consumer group shared by every instance.
	Redis     redis.UniversalClient
	KeyPrefix string
	// Buffer is the capacity of the in-process buffer. Default: 65536.
	Buffer int
	// BatchSize and BatchInterval: a batch leaves when this many clicks are
	// waiting or this long after the last flush. Defaults: 500, 1s.
	BatchSize     int
	BatchInterval time.Duration
	// BufferBytes bounds the clicks held in process (buffered or being
	// flushed), counted by ClickSize. Default: 8 MiB.
	BufferBytes int64
	// StreamMaxLen caps the stream in entries of one batch each.
	// Default: 1000000.
	StreamMaxLen int64
	// StreamMaxBytes caps the stream's entries in bytes (batch ID, encoded
	// clicks and 64 bytes of overhead each): appending trims the oldest
	// entries past either cap, and counts their clicks as dropped
	// (stream_trimmed). Default: 128 MiB.
	StreamMaxBytes int64
	// ClaimMinIdle: entries pending this long with a consumer are taken over
	// by another (XAUTOCLAIM). Default: 1m.
	ClaimMinIdle time.Duration
	// StreamSample: how often each consumer samples the stream's length
	// and its oldest entry's age (caddy_shortener_clicks_stream_length,
	// _lag_seconds). Default: 5s.
	StreamSample time.Duration
	// Retention: rollup rows (hourly counters, referrer days) older than
	// this are pruned in the background, if the sink supports it; the
	// all-time totals stay. 0: never pruned.
	Retention time.Duration
	// HourlyRetention: hourly counters older than this are rolled into
	// daily rollups (kept for Retention) before they are deleted. 0, or
	// longer than Retention: kept for Retention.
	HourlyRetention time.Duration
	// PruneDelay is the wait before the first prune, PruneInterval the wait
	// between prunes, PrunePage the rows one prune statement deletes.
	// Defaults: 1m, 1h, 1000.
	PruneDelay    time.Duration
	PruneInterval time.Duration
	PrunePage     int
	// GeoIP is the path of a MaxMind-format database (GeoLite2, GeoIP2 or
	// DB-IP Country or City, IPinfo Lite) from which the writer derives
	// each click's country, region and city; "": every country is
	// UnknownDim. The file is read at start and again when it changes
	// (stated every GeoIPPoll, default 10s), checked before it replaces
	// the loaded one. A file that fails at start while another recorder
	// of the process uses the path (a config reload) is logged and the
	// last good file read there is used (OpenGeoIP).
	GeoIP     string
	GeoIPPoll time.Duration
	// Registerer for the click metrics (caddy_shortener_clicks_*); nil:
	// not registered.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// InstanceID names this recorder's batches and its consumer; it must be
	// unique per recorder. Default: host name and random hex.
	InstanceID string
	// Now is the clock of retention. Default: time.Now.
	Now func() time.Time

	// Test hooks: called with a consumer's batches; returning true makes the
	// consumer stop dead there, as if its process had been killed.
	CrashBeforeApply func([]Batch) bool
	CrashAfterApply  func([]Batch) bool
}

// Recorder takes clicks from the redirect path without ever blocking
// it, and delivers each exactly once to the sink: through Redis (a stream
// and a consumer group) when configured, otherwise straight to the sink.
type Recorder struct {
	Cfg            Config
	ch             chan Click
	full           chan struct{} // wakes the writer: the buffer holds a batch
	metrics        *clickMetrics
	DroppedCounter prometheus.Counter // metrics.dropped{reason="buffer_full"}
	drops          atomic.Int64       // this recorder's share of the drop counter
	bytes          atomic.Int64       // bytes of the clicks held (buffered or in flight)
	flying         int                // clicks the writer holds in batches (writer only)
	gauges         [2]int64           // clicks and bytes last added to the gauges (writer only)
	inflight       atomic.Int64
	entered        atomic.Int64 // requests that may record a click (Enter, Leave, Drain)
	closed         atomic.Bool
	seq            atomic.Uint64
	Replayed       atomic.Int64 // batches a sink had already applied
	lag            lagState     // for caddy_shortener_clicks_lag_seconds and _stream_length
	lost           atomic.Int64 // clicks given up at Close (also in drops)
	killed         bool         // the consumer died in a test hook
	Stream         string
	group          string
	logger         *slog.Logger
	Ua             *uaParser     // the writer's: device, OS and browser
	Salts          *SaltCache    // the day's visitor salt; nil: the sink keeps none
	visitors       visitorHasher // the writer's
	Geo            *GeoIP        // the writer's GeoIP file; nil: none
	trace          flushTrace    // what the next flush span links to (tracing.go)

	stop     chan struct{} // closed by Close: flush and stop
	ctx      context.Context
	cancel   context.CancelFunc // aborts in-flight I/O when Close gives up
	flushed  chan struct{}      // closed when the writer is done
	consumed chan struct{}      // closed when the consumer is done
	pruned   chan struct{}      // closed when the pruner is done
	pruneCtx context.Context    // cancelled by Close: aborts a prune page
	pruneEnd context.CancelFunc
	stopOnce sync.Once
}

// ClickGroup is the one consumer group every instance's consumer joins.
const ClickGroup = "shortener-clicks"

// NewRecorder starts a recorder's background writer and, with Redis,
// its consumer. It does no network I/O itself.
func NewRecorder(cfg Config) (*Recorder, error) {
	if cfg.Sink == nil {
		return nil, errors.New("click recorder needs a sink")
	}
	if cfg.Buffer < 0 || cfg.BatchSize < 0 || cfg.BatchInterval < 0 || cfg.StreamMaxLen < 0 || cfg.ClaimMinIdle < 0 ||
		cfg.BufferBytes < 0 || cfg.StreamMaxBytes < 0 || cfg.Retention < 0 || cfg.HourlyRetention < 0 || cfg.PruneDelay < 0 || cfg.PruneInterval < 0 || cfg.PrunePage < 0 {
		return nil, errors.New("click settings must not be negative")
	}
	cfg.setDefaults()
	if cfg.StreamMaxBytes < 4*MaxBatchBytes {
		return nil, fmt.Errorf("the click stream's byte cap must be at least %d (four batches)", 4*MaxBatchBytes)
	}
	if cfg.BufferBytes < MaxBatchBytes {
		return nil, fmt.Errorf("the click buffer's byte cap must be at least %d (one batch)", MaxBatchBytes)
	}
	var geo *GeoIP
	if cfg.GeoIP != "" {
		var err error
		if geo, err = OpenGeoIP(cfg.GeoIP, cfg.GeoIPPoll, cfg.Logger); err != nil {
			return nil, err
		}
	}
	m, err := newClickMetrics(cfg.Registerer)
	if err != nil {
		if geo != nil {
			geo.closeFiles()
		}
		return nil, err
	}
	pctx, pcancel := context.WithCancel(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	r := &Recorder{
		Cfg:            cfg,
		ch:             make(chan Click, cfg.Buffer),
		full:           make(chan struct{}, 1),
		metrics:        m,
		DroppedCounter: m.dropped.WithLabelValues(DropBufferFull),
		Stream:         cfg.KeyPrefix + ":clicks",
		group:          ClickGroup,
		logger:         cfg.Logger,
		Ua:             NewUAParser(),
		Geo:            geo,
		stop:           make(chan struct{}),
		ctx:            ctx,
		cancel:         cancel,
		pruneCtx:       pctx,
		pruneEnd:       pcancel,
		flushed:        make(chan struct{}),
		consumed:       make(chan struct{}),
		pruned:         make(chan struct{}),
	}
	if src, ok := cfg.Sink.(VisitorSalter); ok {
		r.Salts = &SaltCache{Src: src}
	}
	if geo != nil {
		go geo.watch(r.stop)
	}
	m.gauges.add(r)
	go r.write()
	if cfg.Redis != nil {
		go r.consume()
	} else {
		close(r.consumed)
	}
	if p, ok := cfg.Sink.(ClickPruner); ok && (cfg.Retention > 0 || cfg.HourlyRetention > 0) {
		go r.prune(p)
	} else {
		close(r.pruned)
	}
	return r, nil
}

// setDefaults fills the settings left at zero: the tuning defaults, the
// logger, the instance ID and the clock.
func (cfg *Config) setDefaults() {
	cfg.SetTuningDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.InstanceID == "" {
		cfg.InstanceID = newInstanceID()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
}

// SetTuningDefaults fills the sizes and intervals left at zero. It is the
// one owner of these defaults: the handler's click settings take theirs
// from it too (Handler.setClickDefaults).
func (cfg *Config) SetTuningDefaults() {
	if cfg.Buffer == 0 {
		cfg.Buffer = DefaultClicksBuffer
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultClicksBatch
	}
	if cfg.BatchInterval == 0 {
		cfg.BatchInterval = DefaultClicksInterval
	}
	if cfg.StreamMaxLen == 0 {
		cfg.StreamMaxLen = DefaultClicksStreamMaxLen
	}
	if cfg.ClaimMinIdle == 0 {
		cfg.ClaimMinIdle = DefaultClicksClaimIdle
	}
	if cfg.StreamSample <= 0 {
		cfg.StreamSample = defaultStreamSample
	}
	if cfg.BufferBytes == 0 {
		cfg.BufferBytes = DefaultClicksBufferBytes
	}
	if cfg.StreamMaxBytes == 0 {
		cfg.StreamMaxBytes = DefaultClicksStreamBytes
	}
	if cfg.PruneDelay == 0 {
		cfg.PruneDelay = time.Minute
	}
	if cfg.PruneInterval == 0 {
		cfg.PruneInterval = time.Hour
	}
	if cfg.PrunePage == 0 {
		cfg.PrunePage = 1000
	}
}

// newInstanceID names a recorder: the host name (for XINFO CONSUMERS
// readers) and random hex, unique per recorder, so a reload or a restart
// is a new consumer and its batch IDs never collide with earlier ones.
func newInstanceID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '-' || r == '.' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return r
		}
		return -1
	}, host)
	if len(host) > 32 {
		host = host[:32]
	}
	if host == "" {
		return id
	}
	return host + "-" + id
}

// Record queues a click. It never blocks and does no I/O: with the buffer
// full (in clicks or in bytes), the recorder closed, or the click out of
// bounds (see ClickSize), the click is dropped and counted in
// caddy_shortener_clicks_dropped_total. The click's strings are held until
// it is flushed: pass copies, not slices of a large request value.
func (r *Recorder) Record(c Click) {
	r.inflight.Add(1)
	defer r.inflight.Add(-1)
	if r.closed.Load() {
		r.drop(dropShutdown, 1)
		return
	}
	size := ClickSize(c)
	if size < 0 {
		r.drop(DropInvalid, 1)
		return
	}
	if r.bytes.Add(size) > r.Cfg.BufferBytes {
		r.bytes.Add(-size)
		r.drop(DropBufferFull, 1)
		return
	}
	if c.At.IsZero() {
		c.At = time.Now()
	}
	select {
	case r.ch <- c:
		// The writer sleeps until a batch is buffered (or its interval
		// passes): one wake-up per batch, not per click.
		if len(r.ch) >= r.Cfg.BatchSize {
			select {
			case r.full <- struct{}{}:
			default:
			}
		}
	default:
		r.bytes.Add(-size)
		r.drop(DropBufferFull, 1)
	}
}

// drop counts n clicks not counted, for reason (one of dropReasons).
func (r *Recorder) drop(reason string, n int) {
	if n <= 0 {
		return
	}
	r.drops.Add(int64(n))
	if reason == DropBufferFull {
		r.DroppedCounter.Add(float64(n)) // the hot path's child, resolved once
		return
	}
	r.metrics.dropped.WithLabelValues(reason).Add(float64(n))
}

// Dropped returns the clicks this recorder dropped.
func (r *Recorder) Dropped() int64 { return r.drops.Load() }

// Stats returns a code's click statistics for [from, to) from the sink.
func (r *Recorder) Stats(ctx context.Context, code string, from, to time.Time) (Stats, error) {
	return r.Cfg.Sink.ClickStats(ctx, code, from, to)
}

// Total returns all clicks counted for code.
func (r *Recorder) Total(ctx context.Context, code string) (int64, error) {
	return r.Cfg.Sink.ClickTotal(ctx, code)
}

// Breakdown returns code's top limit values of dim over [from, to).
func (r *Recorder) Breakdown(ctx context.Context, code, dim string, from, to time.Time, limit int) ([]BreakdownEntry, error) {
	return r.Cfg.Sink.ClickBreakdown(ctx, code, dim, from, to, limit)
}

// Overview returns the clicks of all links over [from, to).
func (r *Recorder) Overview(ctx context.Context, from, to time.Time, limit int) (Overview, error) {
	return r.Cfg.Sink.ClickOverview(ctx, from, to, limit)
}

// Close flushes buffered clicks (to Redis or the sink) and stops the
// consumer after its current batch, waiting at most until ctx is done.
// Clicks it could not flush by then are counted as dropped and reported in
// the error. Record after Close drops.
func (r *Recorder) Close(ctx context.Context) error {
	r.stopOnce.Do(func() {
		r.closed.Store(true)
		for r.inflight.Load() > 0 {
			time.Sleep(time.Microsecond)
		}
		close(r.stop)
		r.pruneEnd() // pruning resumes at the next start
		r.metrics.gauges.remove(r)
	})
	done := make(chan struct{})
	go func() {
		<-r.flushed
		<-r.consumed
		<-r.pruned
		close(done)
	}()
	select {
	case <-done:
		r.cancel()
		return nil
	case <-ctx.Done():
		// Abort in-flight I/O; what was not delivered is counted as dropped
		// once the writer notices.
		r.cancel()
		select {
		case <-done:
		case <-time.After(time.Second):
		}
		select {
		case <-r.flushed:
			if r.lost.Load() == 0 {
				return fmt.Errorf("clicks: the consumer did not stop before the shutdown deadline (its entries stay pending for another instance): %w", ctx.Err())
			}
		default:
		}
		return fmt.Errorf("clicks: shutdown deadline passed before buffered clicks were flushed (%d lost so far): %w", r.lost.Load(), ctx.Err())
	}
}
