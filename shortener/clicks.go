package shortener

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
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

// UAClass is the coarse kind of client behind a click.
type UAClass uint8

// User-agent classes. Bots are counted apart from people; browser and other
// (apps, unknown clients) are people.
const (
	ClassBrowser UAClass = iota
	ClassBot
	ClassOther
)

// Click is one counted redirect.
type Click struct {
	Code     string
	At       time.Time
	Referrer string // host of the Referer header, lowercase; "" if none
	Class    UAClass
}

// Bot reports whether the click comes from a crawler, link previewer or
// script rather than a person.
func (c Click) Bot() bool { return c.Class == ClassBot }

// CountedRequest reports whether a redirect request counts as a click: HEAD
// requests and prefetches (`Sec-Purpose: prefetch`, also with `;prerender`,
// `Purpose: prefetch`, `X-Moz: prefetch`) do not. The caller also skips
// 404 and 410 answers.
func CountedRequest(r *http.Request) bool {
	if r.Method == http.MethodHead {
		return false
	}
	for _, k := range [...]string{"Sec-Purpose", "Purpose", "X-Moz"} {
		for _, v := range r.Header[k] {
			if hasFoldPrefixAt(v, "prefetch") {
				return false
			}
		}
	}
	return true
}

// hasFoldPrefixAt reports whether v contains lower (lowercase ASCII) at the
// start of one of its ';'- or ','-separated items.
func hasFoldPrefixAt(v, lower string) bool {
	for len(v) > 0 {
		v = strings.TrimLeft(v, " \t")
		if hasPrefixFold(v, lower) {
			return true
		}
		i := strings.IndexAny(v, ";,")
		if i < 0 {
			return false
		}
		v = v[i+1:]
	}
	return false
}

// ClassifyRequest returns whether r counts as a click and, if so, the click
// for code at now. It allocates nothing for the common request (at most a
// copy of the referrer host when the Referer header is long).
func ClassifyRequest(r *http.Request, code string, now time.Time) (Click, bool) {
	if !CountedRequest(r) {
		return Click{}, false
	}
	var ua, ref string
	if v := r.Header["User-Agent"]; len(v) > 0 {
		ua = v[0]
	}
	if v := r.Header["Referer"]; len(v) > 0 {
		ref = v[0]
	}
	return Click{Code: code, At: now, Referrer: ReferrerHost(ref), Class: ClassifyUserAgent(ua)}, true
}

// botMarkers are lowercase substrings of crawler, previewer and script
// user agents, indexed by their first byte; botBigrams has a bit set for
// the first two bytes of each, so one pass over the user agent with one
// table test per byte finds the few places worth comparing.
var (
	botMarkers [256][]string
	botBigrams [65536 / 64]uint64
)

func init() {
	for _, m := range []string{
		"bot", "crawl", "spider", "slurp", "preview", "facebookexternalhit", "embedly",
		"curl/", "wget/", "python", "go-http-client", "java/", "libwww", "httpclient", "http_request",
		"axios/", "node-fetch", "undici", "okhttp/", "headless", "lighthouse", "pingdom", "monitor",
		"scanner", "archiver", "whatsapp", "vkshare", "postman", "feed", "validator",
	} {
		botMarkers[m[0]] = append(botMarkers[m[0]], m)
		bg := uint16(m[0])<<8 | uint16(m[1])
		botBigrams[bg/64] |= 1 << (bg % 64)
	}
}

// ClassifyUserAgent sorts a User-Agent into browser, bot or other, without
// regular expressions or allocation. An empty user agent is a bot (scripts
// send none; browsers always do).
func ClassifyUserAgent(ua string) UAClass {
	if ua == "" {
		return ClassBot
	}
	for i := 0; i+1 < len(ua); i++ {
		bg := uint16(lowerASCII(ua[i]))<<8 | uint16(lowerASCII(ua[i+1]))
		if botBigrams[bg/64]&(1<<(bg%64)) == 0 {
			continue
		}
		for _, m := range botMarkers[lowerASCII(ua[i])] {
			if hasPrefixFold(ua[i:], m) {
				return ClassBot
			}
		}
	}
	if strings.HasPrefix(ua, "Mozilla/") || strings.HasPrefix(ua, "Opera/") {
		return ClassBrowser
	}
	return ClassOther
}

func lowerASCII(c byte) byte { return lowerTable[c] }

var lowerTable = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i) + 'a' - 'A'
		}
	}
	return t
}()

// hasPrefixFold reports whether s starts with lower, ASCII case-insensitively.
func hasPrefixFold(s, lower string) bool {
	if len(s) < len(lower) {
		return false
	}
	for i := 0; i < len(lower); i++ {
		if lowerASCII(s[i]) != lower[i] {
			return false
		}
	}
	return true
}

// ReferrerHost reduces a Referer value to its host, lowercase, without port
// or user info: "https://News.Example.com:8443/a?b" → "news.example.com".
// Anything that is not an absolute URL with a plausible host gives "".
func ReferrerHost(ref string) string {
	i := strings.Index(ref, "://")
	if i <= 0 || len(ref) > 4096 {
		return ""
	}
	host := ref[i+3:]
	if j := strings.IndexAny(host, "/?#"); j >= 0 {
		host = host[:j]
	}
	if j := strings.LastIndexByte(host, '@'); j >= 0 {
		host = host[j+1:]
	}
	if strings.HasPrefix(host, "[") {
		j := strings.IndexByte(host, ']')
		if j < 0 {
			return ""
		}
		host = host[:j+1]
	} else if j := strings.LastIndexByte(host, ':'); j >= 0 {
		host = host[:j]
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > 253 {
		return ""
	}
	upper := false
	for k := 0; k < len(host); k++ {
		switch c := host[k]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '.', c == '-', c == '_', c == ':', c == '[', c == ']':
		case 'A' <= c && c <= 'Z':
			upper = true
		default:
			return ""
		}
	}
	if upper {
		return strings.ToLower(host)
	}
	if len(ref) > 128 {
		// Do not pin a long header in memory until the flush.
		return strings.Clone(host)
	}
	return host
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

// Stream entry fields: the batch ID and the clicks, one per line as
// "code \t unix-ms \t class \t referrer".
const (
	fieldBatch  = "batch"
	fieldClicks = "clicks"
)

// xadd appends one stream entry per batch in one pipeline. A retry after an
// ambiguous failure may append a batch twice; the sink skips the second by
// its batch ID.
func (r *ClickRecorder) xadd(ctx context.Context, batches []ClickBatch) error {
	_, err := r.cfg.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, b := range batches {
			p.XAdd(ctx, &redis.XAddArgs{
				Stream: r.stream,
				MaxLen: r.cfg.StreamMaxLen,
				Approx: true,
				Values: []string{fieldBatch, b.ID, fieldClicks, encodeClicks(b.Clicks)},
			})
		}
		// No key lives forever: the stream goes a week after its last write.
		p.Expire(ctx, r.stream, 7*24*time.Hour)
		return nil
	})
	return err
}

func encodeClicks(clicks []Click) string {
	var sb strings.Builder
	sb.Grow(len(clicks) * 32)
	for _, c := range clicks {
		sb.WriteString(c.Code)
		sb.WriteByte('\t')
		sb.WriteString(strconv.FormatInt(c.At.UnixMilli(), 10))
		sb.WriteByte('\t')
		sb.WriteByte('0' + byte(c.Class))
		sb.WriteByte('\t')
		sb.WriteString(c.Referrer)
		sb.WriteByte('\n')
	}
	return sb.String()
}

func decodeClicks(s string) ([]Click, error) {
	out := make([]Click, 0, strings.Count(s, "\n"))
	for line := range strings.Lines(s) {
		line = strings.TrimSuffix(line, "\n")
		code, rest, ok1 := strings.Cut(line, "\t")
		ms, rest, ok2 := strings.Cut(rest, "\t")
		class, ref, ok3 := strings.Cut(rest, "\t")
		if !ok1 || !ok2 || !ok3 || code == "" || len(class) != 1 || class[0] < '0' || class[0] > '0'+byte(ClassOther) {
			return nil, fmt.Errorf("malformed click %q", line)
		}
		t, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("malformed click time %q", ms)
		}
		out = append(out, Click{Code: code, At: time.UnixMilli(t).UTC(), Referrer: ref, Class: UAClass(class[0] - '0')})
	}
	return out, nil
}

// consume runs this instance's consumer in the shared group until Close.
func (r *ClickRecorder) consume() {
	defer close(r.consumed)
	consumer := r.cfg.InstanceID
	defer r.leaveGroup(consumer)
	block := min(r.cfg.BatchInterval, time.Second)
	backoff := 50 * time.Millisecond
	ownPending := true // read our own pending entries first ("0"), then new ones (">")
	groupReady := false
	lastClaim := time.Time{}
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		err := func() error {
			ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
			defer cancel()
			if !groupReady {
				err := r.cfg.Redis.XGroupCreateMkStream(ctx, r.stream, r.group, "0").Err()
				if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
					return fmt.Errorf("creating consumer group: %w", err)
				}
				groupReady = true
			}
			if time.Since(lastClaim) >= r.cfg.ClaimMinIdle/2 {
				if err := r.claim(ctx, consumer); err != nil {
					return err
				}
				lastClaim = time.Now()
			}
			start := ">"
			if ownPending {
				start = "0"
			}
			res, err := r.cfg.Redis.XReadGroup(ctx, &redis.XReadGroupArgs{
				Group:    r.group,
				Consumer: consumer,
				Streams:  []string{r.stream, start},
				Count:    maxPipeline,
				Block:    block,
			}).Result()
			if errors.Is(err, redis.Nil) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading clicks: %w", err)
			}
			var msgs []redis.XMessage
			for _, s := range res {
				msgs = append(msgs, s.Messages...)
			}
			if ownPending && len(msgs) == 0 {
				ownPending = false
				return nil
			}
			return r.apply(ctx, msgs)
		}()
		if errors.Is(err, errConsumerKilled) {
			r.killed = true
			return
		}
		if err == nil {
			backoff = 50 * time.Millisecond
			continue
		}
		if r.ctx.Err() != nil {
			return
		}
		if strings.Contains(err.Error(), "NOGROUP") {
			groupReady = false // Redis lost the stream (restart without persistence)
		}
		ownPending = true
		r.logger.Warn("click consumer failed; retrying", zap.Error(err))
		select {
		case <-time.After(backoff):
		case <-r.stop:
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

var errConsumerKilled = errors.New("consumer killed by test hook")

// leaveGroup removes this consumer from the group when it stops with
// nothing pending, so reloads do not pile up consumers. With entries still
// pending it stays: another instance claims them.
func (r *ClickRecorder) leaveGroup(consumer string) {
	if r.killed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pending, err := r.cfg.Redis.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: r.stream, Group: r.group, Consumer: consumer, Start: "-", End: "+", Count: 1,
	}).Result()
	if err != nil || len(pending) > 0 {
		return
	}
	_ = r.cfg.Redis.XGroupDelConsumer(ctx, r.stream, r.group, consumer).Err()
}

// claim takes over entries left pending by dead consumers and applies them.
func (r *ClickRecorder) claim(ctx context.Context, consumer string) error {
	start := "0-0"
	for {
		msgs, next, err := r.cfg.Redis.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream:   r.stream,
			Group:    r.group,
			MinIdle:  r.cfg.ClaimMinIdle,
			Start:    start,
			Count:    maxPipeline,
			Consumer: consumer,
		}).Result()
		if err != nil {
			return fmt.Errorf("claiming pending clicks: %w", err)
		}
		if len(msgs) > 0 {
			if err := r.apply(ctx, msgs); err != nil {
				return err
			}
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
}

// apply counts stream entries in the sink (one transaction, idempotent by
// batch ID) and then acknowledges and deletes them.
func (r *ClickRecorder) apply(ctx context.Context, msgs []redis.XMessage) error {
	ids := make([]string, 0, len(msgs))
	batches := make([]ClickBatch, 0, len(msgs))
	for _, m := range msgs {
		ids = append(ids, m.ID)
		if m.Values == nil {
			continue // trimmed away while pending
		}
		id, _ := m.Values[fieldBatch].(string)
		data, _ := m.Values[fieldClicks].(string)
		clicks, err := decodeClicks(data)
		if id == "" || err != nil {
			r.logger.Error("skipping malformed click stream entry", zap.String("entry", m.ID), zap.Error(err))
			continue
		}
		batches = append(batches, ClickBatch{ID: id, Clicks: clicks})
	}
	if len(batches) > 0 {
		if h := r.cfg.crashBeforeApply; h != nil && h(batches) {
			return errConsumerKilled
		}
		applied, err := r.cfg.Sink.ApplyClicks(ctx, batches)
		if err != nil {
			return fmt.Errorf("applying clicks: %w", err)
		}
		r.replayed.Add(int64(len(batches) - applied))
		if h := r.cfg.crashAfterApply; h != nil && h(batches) {
			return errConsumerKilled
		}
	}
	_, err := r.cfg.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, r.stream, r.group, ids...)
		p.XDel(ctx, r.stream, ids...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("acknowledging clicks: %w", err)
	}
	return nil
}
