package shortener

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Defaults of click counting.
const (
	DefaultClicksBuffer       = 65536
	DefaultClicksBatch        = 500
	DefaultClicksInterval     = time.Second
	DefaultClicksStreamMaxLen = 1000000
	DefaultClicksClaimIdle    = time.Minute
	DefaultClicksBufferBytes  = 8 << 20
	DefaultClicksStreamBytes  = 128 << 20
	DefaultClicksReferrers    = 100
	DefaultClicksRetention    = 400 * 24 * time.Hour
)

// Sizes of click records. A click is counted as clickFixedSize bytes (the
// Click value held in the buffer; it also covers the encoded time, class
// and separators, at most 25 bytes) plus its code and referrer, so no
// click counts more than maxClickSize bytes, in memory or encoded.
const (
	clickFixedSize = 64
	// MaxReferrerHost is the longest referrer host kept (a DNS name's
	// limit); ReferrerHost gives "" for longer ones.
	MaxReferrerHost = 253
	maxClickSize    = clickFixedSize + MaxCustomCodeLen + MaxReferrerHost
	// maxBatchBytes bounds a batch (one stream entry, one transaction's
	// clicks) in bytes: a batch is sealed at batch size clicks or at this
	// size, whichever comes first (500 typical clicks take about 45 KiB).
	maxBatchBytes = 64 << 10
)

// clickSize returns the bytes a click is counted for, or -1 when its code
// or referrer is out of bounds (such a click is dropped as invalid: its
// encoding could not be decoded, or it would be stored unbounded).
func clickSize(c Click) int64 {
	if !ValidLookupCode(c.Code) || !validReferrerHost(c.Referrer) || c.Class > ClassOther {
		return -1
	}
	return int64(clickFixedSize + len(c.Code) + len(c.Referrer))
}

// ClickBatch is a set of clicks with an ID unique across instances: the
// unit of idempotence. A sink applies a batch ID at most once.
type ClickBatch struct {
	ID     string
	Clicks []Click
}

// ClickSink is where click counters live: PostgreSQL or the embedded store.
type ClickSink interface {
	// ApplyClicks adds the clicks of the batches whose IDs it has not seen,
	// and records those IDs, in one transaction; batches seen before are
	// skipped. It returns how many batches were new.
	ApplyClicks(ctx context.Context, batches []ClickBatch) (applied int, err error)
	// ClickStats returns a code's counters for hours in [from, to).
	ClickStats(ctx context.Context, code string, from, to time.Time) (ClickStats, error)
	// ClickTotal returns all clicks ever counted for code.
	ClickTotal(ctx context.Context, code string) (int64, error)
}

// clickSinkFor returns the click sink kept in the link store's own
// database: the tables of migrations/002_clicks.up.sql and
// 003_click_bounds.up.sql (applied by OpenPostgres) or buckets in the
// embedded store's bbolt file. referrers caps the named referrer hosts
// per link per day (0: DefaultClicksReferrers).
func clickSinkFor(s Store, referrers int) (ClickSink, error) {
	switch s := s.(type) {
	case *PostgresStore:
		return newPostgresClickSink(s.pool, referrers), nil
	case *EmbeddedStore:
		return newEmbeddedClickSink(s.db, referrers)
	}
	return nil, fmt.Errorf("click counting needs the postgres or embedded store, not %T", s)
}

// ClickConfig configures a ClickRecorder.
type ClickConfig struct {
	// Sink receives the clicks (required).
	Sink ClickSink
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
	// flushed), counted by clickSize. Default: 8 MiB.
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
	// Retention: rollup rows (hourly counters, referrer days) older than
	// this are pruned in the background, if the sink supports it; the
	// all-time totals stay. 0: never pruned.
	Retention time.Duration
	// PruneDelay is the wait before the first prune, PruneInterval the wait
	// between prunes, PrunePage the rows one prune statement deletes.
	// Defaults: 1m, 1h, 1000.
	PruneDelay    time.Duration
	PruneInterval time.Duration
	PrunePage     int
	// Registerer for the click metrics (caddy_shortener_clicks_*); nil:
	// not registered.
	Registerer prometheus.Registerer
	Logger     *zap.Logger
	// InstanceID names this recorder's batches and its consumer; it must be
	// unique per recorder. Default: host name and random hex.
	InstanceID string
	// now is the clock of retention. Default: time.Now.
	now func() time.Time

	// Test hooks: called with a consumer's batches; returning true makes the
	// consumer stop dead there, as if its process had been killed.
	crashBeforeApply func([]ClickBatch) bool
	crashAfterApply  func([]ClickBatch) bool
}

// ClickRecorder takes clicks from the redirect path without ever blocking
// it, and delivers each exactly once to the sink: through Redis (a stream
// and a consumer group) when configured, otherwise straight to the sink.
type ClickRecorder struct {
	cfg      ClickConfig
	ch       chan Click
	full     chan struct{} // wakes the writer: the buffer holds a batch
	metrics  *clickMetrics
	dropped  prometheus.Counter // metrics.dropped{reason="buffer_full"}
	drops    atomic.Int64       // this recorder's share of the drop counter
	bytes    atomic.Int64       // bytes of the clicks held (buffered or in flight)
	flying   int                // clicks the writer holds in batches (writer only)
	gauges   [2]int64           // clicks and bytes last added to the gauges (writer only)
	inflight atomic.Int64
	closed   atomic.Bool
	seq      atomic.Uint64
	replayed atomic.Int64 // batches a sink had already applied
	lost     atomic.Int64 // clicks given up at Close (also in drops)
	killed   bool         // the consumer died in a test hook
	stream   string
	group    string
	logger   *zap.Logger

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

// clickGroup is the one consumer group every instance's consumer joins.
const clickGroup = "shortener-clicks"

// NewClickRecorder starts a recorder's background writer and, with Redis,
// its consumer. It does no network I/O itself.
func NewClickRecorder(cfg ClickConfig) (*ClickRecorder, error) {
	if cfg.Sink == nil {
		return nil, errors.New("click recorder needs a sink")
	}
	if cfg.Buffer < 0 || cfg.BatchSize < 0 || cfg.BatchInterval < 0 || cfg.StreamMaxLen < 0 || cfg.ClaimMinIdle < 0 ||
		cfg.BufferBytes < 0 || cfg.StreamMaxBytes < 0 || cfg.Retention < 0 || cfg.PruneDelay < 0 || cfg.PruneInterval < 0 || cfg.PrunePage < 0 {
		return nil, errors.New("click settings must not be negative")
	}
	cfg.setDefaults()
	if cfg.StreamMaxBytes < 4*maxBatchBytes {
		return nil, fmt.Errorf("the click stream's byte cap must be at least %d (four batches)", 4*maxBatchBytes)
	}
	if cfg.BufferBytes < maxBatchBytes {
		return nil, fmt.Errorf("the click buffer's byte cap must be at least %d (one batch)", maxBatchBytes)
	}
	m, err := newClickMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	pctx, pcancel := context.WithCancel(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	r := &ClickRecorder{
		cfg:      cfg,
		ch:       make(chan Click, cfg.Buffer),
		full:     make(chan struct{}, 1),
		metrics:  m,
		dropped:  m.dropped.WithLabelValues(dropBufferFull),
		stream:   cfg.KeyPrefix + ":clicks",
		group:    clickGroup,
		logger:   cfg.Logger,
		stop:     make(chan struct{}),
		ctx:      ctx,
		cancel:   cancel,
		pruneCtx: pctx,
		pruneEnd: pcancel,
		flushed:  make(chan struct{}),
		consumed: make(chan struct{}),
		pruned:   make(chan struct{}),
	}
	go r.write()
	if cfg.Redis != nil {
		go r.consume()
	} else {
		close(r.consumed)
	}
	if p, ok := cfg.Sink.(clickPruner); ok && cfg.Retention > 0 {
		go r.prune(p)
	} else {
		close(r.pruned)
	}
	return r, nil
}

func (cfg *ClickConfig) setDefaults() {
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
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.InstanceID == "" {
		cfg.InstanceID = newInstanceID()
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
	if cfg.now == nil {
		cfg.now = time.Now
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
// bounds (see clickSize), the click is dropped and counted in
// caddy_shortener_clicks_dropped_total. The click's strings are held until
// it is flushed: pass copies, not slices of a large request value.
func (r *ClickRecorder) Record(c Click) {
	r.inflight.Add(1)
	defer r.inflight.Add(-1)
	if r.closed.Load() {
		r.drop(dropShutdown, 1)
		return
	}
	size := clickSize(c)
	if size < 0 {
		r.drop(dropInvalid, 1)
		return
	}
	if r.bytes.Add(size) > r.cfg.BufferBytes {
		r.bytes.Add(-size)
		r.drop(dropBufferFull, 1)
		return
	}
	if c.At.IsZero() {
		c.At = time.Now()
	}
	select {
	case r.ch <- c:
		// The writer sleeps until a batch is buffered (or its interval
		// passes): one wake-up per batch, not per click.
		if len(r.ch) >= r.cfg.BatchSize {
			select {
			case r.full <- struct{}{}:
			default:
			}
		}
	default:
		r.bytes.Add(-size)
		r.drop(dropBufferFull, 1)
	}
}

// drop counts n clicks not counted, for reason (one of dropReasons).
func (r *ClickRecorder) drop(reason string, n int) {
	if n <= 0 {
		return
	}
	r.drops.Add(int64(n))
	if reason == dropBufferFull {
		r.dropped.Add(float64(n)) // the hot path's child, resolved once
		return
	}
	r.metrics.dropped.WithLabelValues(reason).Add(float64(n))
}

// Dropped returns the clicks this recorder dropped.
func (r *ClickRecorder) Dropped() int64 { return r.drops.Load() }

// Stats returns a code's click statistics for [from, to) from the sink.
func (r *ClickRecorder) Stats(ctx context.Context, code string, from, to time.Time) (ClickStats, error) {
	return r.cfg.Sink.ClickStats(ctx, code, from, to)
}

// Total returns all clicks counted for code.
func (r *ClickRecorder) Total(ctx context.Context, code string) (int64, error) {
	return r.cfg.Sink.ClickTotal(ctx, code)
}

// Close flushes buffered clicks (to Redis or the sink) and stops the
// consumer after its current batch, waiting at most until ctx is done.
// Clicks it could not flush by then are counted as dropped and reported in
// the error. Record after Close drops.
func (r *ClickRecorder) Close(ctx context.Context) error {
	r.stopOnce.Do(func() {
		r.closed.Store(true)
		for r.inflight.Load() > 0 {
			time.Sleep(time.Microsecond)
		}
		close(r.stop)
		r.pruneEnd() // pruning resumes at the next start
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

// maxPipeline bounds the batches one flush carries (a backlog after an
// outage is sent in pipelines of this many).
const maxPipeline = 16

// write is the writer goroutine: it sleeps until the buffer holds a batch
// (Record wakes it) or its interval passes, then takes the buffered
// clicks in batches and delivers them, retrying with backoff until they
// are accepted. A partial batch leaves when the interval passes.
func (r *ClickRecorder) write() {
	defer close(r.flushed)
	n := r.cfg.BatchSize
	ticker := time.NewTicker(r.cfg.BatchInterval)
	defer ticker.Stop()
	for {
		partial := false // the interval passed: a partial batch leaves too
		select {
		case <-r.full:
		case <-ticker.C:
			partial = true
		case <-r.stop:
			r.final(nil)
			r.report()
			return
		}
		r.report()
		for {
			// Whole batches already waiting, up to one pipeline, then the
			// rest as a partial batch if the interval passed.
			var batches []ClickBatch
			for len(batches) < maxPipeline && len(r.ch) >= n {
				batches = append(batches, r.seal(r.take(n)))
			}
			if partial && len(batches) < maxPipeline {
				if b := r.take(n); len(b) > 0 {
					batches = append(batches, r.seal(b))
				}
			}
			if len(batches) == 0 {
				break
			}
			if !r.deliver(batches) {
				r.lose(batches)
				return
			}
			if len(r.ch) < n {
				break // what is left waits for the next wake-up
			}
		}
	}
}

// final drains the buffer at Close and delivers everything.
func (r *ClickRecorder) final(cur []Click) {
	for {
		var batches []ClickBatch
		if len(cur) > 0 {
			batches = append(batches, r.seal(cur))
			cur = nil
		}
		for len(batches) < maxPipeline {
			b := r.take(r.cfg.BatchSize)
			if len(b) == 0 {
				break
			}
			batches = append(batches, r.seal(b))
		}
		if len(batches) == 0 {
			return
		}
		if !r.deliver(batches) {
			r.lose(batches)
			return
		}
	}
}

// take returns up to n buffered clicks, at most maxBatchBytes of them,
// without waiting.
func (r *ClickRecorder) take(n int) []Click {
	var b []Click
	var size int64
	for len(b) < n && size <= maxBatchBytes-maxClickSize {
		select {
		case c := <-r.ch:
			if b == nil {
				b = make([]Click, 0, min(n, 1024))
			}
			b = append(b, c)
			size += clickBytes(c)
		default:
			return b
		}
	}
	return b
}

// clickBytes is clickSize of a click known to be valid.
func clickBytes(c Click) int64 { return int64(clickFixedSize + len(c.Code) + len(c.Referrer)) }

func batchBytes(clicks []Click) (n int64) {
	for _, c := range clicks {
		n += clickBytes(c)
	}
	return n
}

// report moves the gauges by what changed since its last call: the clicks
// held in process (buffered and in the writer's batches) and their bytes.
// Called by the writer only, at each wake-up and flush.
func (r *ClickRecorder) report() {
	held, bytes := int64(len(r.ch)+r.flying), r.bytes.Load()
	r.metrics.buffered.Add(float64(held - r.gauges[0]))
	r.metrics.bufferedBytes.Add(float64(bytes - r.gauges[1]))
	r.gauges = [2]int64{held, bytes}
}

// Buffered returns the clicks this recorder holds (buffered or being
// flushed) and their bytes: what a crash would lose.
func (r *ClickRecorder) Buffered() (clicks int, bytes int64) {
	return len(r.ch), r.bytes.Load()
}

// lose counts the given batches and everything still buffered as dropped:
// Close gave up on them.
func (r *ClickRecorder) lose(batches []ClickBatch) {
	var n int
	var size int64
	for _, b := range batches {
		n += len(b.Clicks)
		size += batchBytes(b.Clicks)
	}
	for b := r.take(4096); len(b) > 0; b = r.take(4096) {
		n += len(b)
		size += batchBytes(b)
	}
	r.bytes.Add(-size)
	r.report()
	r.lost.Add(int64(n))
	r.drop(dropShutdown, n)
	r.logger.Error("clicks lost at shutdown: could not flush before the deadline", zap.Int("clicks", n))
}

func (r *ClickRecorder) seal(clicks []Click) ClickBatch {
	return ClickBatch{ID: r.cfg.InstanceID + "-" + strconv.FormatUint(r.seq.Add(1), 10), Clicks: clicks}
}

// deliver sends batches until accepted; false only when Close gave up
// (the caller then counts them lost). Until then they count as held.
func (r *ClickRecorder) deliver(batches []ClickBatch) bool {
	var n int
	var size int64
	for _, b := range batches {
		n += len(b.Clicks)
		size += batchBytes(b.Clicks)
	}
	r.flying += n
	ok := r.send(batches)
	r.flying -= n
	if ok {
		r.bytes.Add(-size)
		r.report()
	}
	return ok
}

// send sends batches until accepted, retrying with backoff.
func (r *ClickRecorder) send(batches []ClickBatch) bool {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
		var err error
		if r.cfg.Redis != nil {
			err = r.xadd(ctx, batches)
		} else {
			var applied int
			applied, err = r.cfg.Sink.ApplyClicks(ctx, batches)
			if err == nil {
				r.replayed.Add(int64(len(batches) - applied))
			}
		}
		cancel()
		if err == nil {
			return true
		}
		if r.ctx.Err() != nil {
			return false
		}
		r.report() // the buffer fills during an outage: keep the gauges current
		if attempt == 1 || attempt%20 == 0 {
			r.logger.Warn("click flush failed; retrying (clicks stay buffered)",
				zap.Int("batches", len(batches)), zap.Int("attempt", attempt), zap.Error(err))
		}
		select {
		case <-time.After(backoff):
		case <-r.ctx.Done():
			return false
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}
