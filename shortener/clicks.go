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
)

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
// database: the tables of migrations/002_clicks.up.sql (applied by
// OpenPostgres) or buckets in the embedded store's bbolt file.
func clickSinkFor(s Store) (ClickSink, error) {
	switch s := s.(type) {
	case *PostgresStore:
		return newPostgresClickSink(s.pool), nil
	case *EmbeddedStore:
		return newEmbeddedClickSink(s.db)
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
	// StreamMaxLen caps the stream (XADD MAXLEN ~), in entries of one batch
	// each. Default: 1000000.
	StreamMaxLen int64
	// ClaimMinIdle: entries pending this long with a consumer are taken over
	// by another (XAUTOCLAIM). Default: 1m.
	ClaimMinIdle time.Duration
	// Registerer for caddy_shortener_clicks_dropped_total; nil: not
	// registered.
	Registerer prometheus.Registerer
	Logger     *zap.Logger
	// InstanceID names this recorder's batches and its consumer; it must be
	// unique per recorder. Default: host name and random hex.
	InstanceID string

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
	dropped  prometheus.Counter
	drops    atomic.Int64 // this recorder's share of the counter
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
	if cfg.Buffer < 0 || cfg.BatchSize < 0 || cfg.BatchInterval < 0 || cfg.StreamMaxLen < 0 || cfg.ClaimMinIdle < 0 {
		return nil, errors.New("click settings must not be negative")
	}
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
	dropped := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "caddy",
		Subsystem: "shortener",
		Name:      "clicks_dropped_total",
		Help:      "Clicks not counted because the in-process click buffer was full (or could not be flushed at shutdown).",
	})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(dropped); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("registering click metrics: %w", err)
			}
			existing, ok := are.ExistingCollector.(prometheus.Counter)
			if !ok {
				return nil, fmt.Errorf("registering click metrics: %w", err)
			}
			dropped = existing
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &ClickRecorder{
		cfg:      cfg,
		ch:       make(chan Click, cfg.Buffer),
		full:     make(chan struct{}, 1),
		dropped:  dropped,
		stream:   cfg.KeyPrefix + ":clicks",
		group:    clickGroup,
		logger:   cfg.Logger,
		stop:     make(chan struct{}),
		ctx:      ctx,
		cancel:   cancel,
		flushed:  make(chan struct{}),
		consumed: make(chan struct{}),
	}
	go r.write()
	if cfg.Redis != nil {
		go r.consume()
	} else {
		close(r.consumed)
	}
	return r, nil
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
// full (or the recorder closed) the click is dropped and counted in
// caddy_shortener_clicks_dropped_total.
func (r *ClickRecorder) Record(c Click) {
	r.inflight.Add(1)
	if r.closed.Load() {
		r.inflight.Add(-1)
		r.drop(1)
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
		r.drop(1)
	}
	r.inflight.Add(-1)
}

func (r *ClickRecorder) drop(n int) {
	r.drops.Add(int64(n))
	r.dropped.Add(float64(n))
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
	})
	done := make(chan struct{})
	go func() {
		<-r.flushed
		<-r.consumed
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
			return
		}
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

// take returns up to n buffered clicks without waiting.
func (r *ClickRecorder) take(n int) []Click {
	var b []Click
	for len(b) < n {
		select {
		case c := <-r.ch:
			if b == nil {
				b = make([]Click, 0, n)
			}
			b = append(b, c)
		default:
			return b
		}
	}
	return b
}

// lose counts the given batches and everything still buffered as dropped:
// Close gave up on them.
func (r *ClickRecorder) lose(batches []ClickBatch) {
	var n int
	for _, b := range batches {
		n += len(b.Clicks)
	}
	for b := r.take(4096); len(b) > 0; b = r.take(4096) {
		n += len(b)
	}
	r.lost.Add(int64(n))
	r.drop(n)
	r.logger.Error("clicks lost at shutdown: could not flush before the deadline", zap.Int("clicks", n))
}

func (r *ClickRecorder) seal(clicks []Click) ClickBatch {
	return ClickBatch{ID: r.cfg.InstanceID + "-" + strconv.FormatUint(r.seq.Add(1), 10), Clicks: clicks}
}

// deliver sends batches until accepted; false only when Close gave up.
func (r *ClickRecorder) deliver(batches []ClickBatch) bool {
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
