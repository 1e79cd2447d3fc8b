package shortener

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/clientip"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

var testClickCodes = []string{"code0", "code1", "code2", "code3", "code4"}

// clickLoad is what a run of simulated redirects should have counted.
type clickLoad struct {
	counted, people, bots, skipped atomic.Int64
	refA                           atomic.Int64 // clicks referred by a.example
}

var testUAs = []string{
	"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	"MyApp/1.0 (Android 14)",
	"curl/8.5.0",
}

// redirect simulates one redirect through ClassifyRequest and Record; every
// tenth request is a HEAD or a prefetch, which must not count.
func (l *clickLoad) redirect(rec *clicks.Recorder, i int) {
	method := "GET"
	r := httptest.NewRequest(method, "/x", nil)
	switch i % 20 {
	case 7:
		r.Method = "HEAD"
	case 17:
		r.Header.Set("Sec-Purpose", "prefetch;prerender")
	}
	r.Header.Set("User-Agent", testUAs[i%len(testUAs)])
	if i%3 == 0 {
		r.Header.Set("Referer", "https://A.example/post")
	}
	c, ok := clicks.ClassifyRequest(r, clientip.Addr(r), testClickCodes[i%len(testClickCodes)], time.Now())
	if !ok {
		l.skipped.Add(1)
		return
	}
	l.counted.Add(1)
	if c.Bot() {
		l.bots.Add(1)
	} else {
		l.people.Add(1)
	}
	if c.Referrer == "a.example" {
		l.refA.Add(1)
	}
	rec.Record(c)
}

// run makes redirects from 300 goroutines, spread over recs, until want
// of them counted; it returns the next request number.
func (l *clickLoad) run(recs []*clicks.Recorder, start, want int) int {
	var next atomic.Int64
	next.Store(int64(start))
	target := l.counted.Load() + int64(want)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if l.counted.Load() >= target {
					mu.Unlock()
					return
				}
				i := int(next.Add(1))
				l.redirect(recs[i%len(recs)], i)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return int(next.Load())
}

// totalClicks sums ClickTotal over the test codes.
func totalClicks(t *testing.T, s clicks.Sink) int64 {
	t.Helper()
	var n int64
	for _, c := range testClickCodes {
		v, err := s.ClickTotal(context.Background(), c)
		if err != nil {
			t.Fatalf("ClickTotal: %v", err)
		}
		n += v
	}
	return n
}

// waitTotal waits until the sink counts want clicks, then checks the count
// stays there (nothing arrives twice).
func waitTotal(t *testing.T, s clicks.Sink, want int64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := totalClicks(t, s)
		if got > want {
			t.Fatalf("total clicks = %d, more than the %d recorded", got, want)
		}
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("total clicks = %d after %v, want %d", got, timeout, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if got := totalClicks(t, s); got != want {
		t.Fatalf("total clicks moved to %d after settling, want %d", got, want)
	}
}

func droppedMetric(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "caddy_shortener_clicks_dropped_total" {
			var sum float64 // every reason
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	t.Fatal("caddy_shortener_clicks_dropped_total not registered")
	return 0
}

func newTestRecorder(t *testing.T, cfg clicks.Config) *clicks.Recorder {
	t.Helper()
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 100
	}
	if cfg.BatchInterval == 0 {
		cfg.BatchInterval = 50 * time.Millisecond
	}
	if cfg.ClaimMinIdle == 0 {
		cfg.ClaimMinIdle = 2 * time.Second
	}
	rec, err := clicks.NewRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rec.Close(ctx)
	})
	return rec
}

func closeRecorder(t *testing.T, rec *clicks.Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rec.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// assertStreamDrained checks no entry is left in the stream or pending.
func assertStreamDrained(t *testing.T, rdb redis.UniversalClient, prefix string) {
	t.Helper()
	ctx := context.Background()
	if n, err := rdb.XLen(ctx, prefix+":clicks").Result(); err != nil || n != 0 {
		t.Errorf("XLEN %s:clicks = %d, %v; want 0", prefix, n, err)
	}
	p, err := rdb.XPending(ctx, prefix+":clicks", clicks.ClickGroup).Result()
	if err != nil || p.Count != 0 {
		t.Errorf("XPENDING = %+v, %v; want 0 pending", p, err)
	}
}

// assertConsumers checks the group's consumers: closed recorders left.
func assertConsumers(t *testing.T, rdb redis.UniversalClient, prefix string, want int) {
	t.Helper()
	cs, err := rdb.XInfoConsumers(context.Background(), prefix+":clicks", clicks.ClickGroup).Result()
	if err != nil || len(cs) != want {
		t.Errorf("XINFO CONSUMERS = %+v, %v; want %d consumers", cs, err, want)
	}
}

// Acceptance 1: 10,000 redirects over three nodes sharing Redis and
// PostgreSQL are counted exactly; HEAD and prefetch add nothing.
func TestClicksThreeNodesRedisPostgres(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	testClicksThreeNodes(t, rdb, prefix)
}

// The same against a Redis Cluster: the stream is one key, so every
// command of the pipeline is single-slot.
func TestClicksThreeNodesRedisCluster(t *testing.T) {
	rdb, prefix := testenv.RedisCluster(t)
	testClicksThreeNodes(t, rdb, prefix)
}

func testClicksThreeNodes(t *testing.T, rdb redis.UniversalClient, prefix string) {
	dsn := testenv.Postgres(t)
	reg := prometheus.NewRegistry()
	var recs []*clicks.Recorder
	var sink clicks.Sink
	for i := range 3 {
		s := store.NewPostgresClickSink(testClickPool(t, dsn), 0) // each node has its own pool
		if i == 0 {
			sink = s
		}
		recs = append(recs, newTestRecorder(t, clicks.Config{Sink: s, Redis: rdb, KeyPrefix: prefix, Registerer: reg}))
	}
	var load clickLoad
	load.run(recs, 0, 10000)
	if load.skipped.Load() == 0 {
		t.Fatal("the load made no HEAD or prefetch requests")
	}
	waitTotal(t, sink, 10000, 30*time.Second)

	from, to := time.Now().Add(-2*time.Hour), time.Now().Add(time.Hour)
	var people, bots, refA int64
	for _, c := range testClickCodes {
		st, err := sink.ClickStats(context.Background(), c, from, to)
		if err != nil {
			t.Fatal(err)
		}
		people += st.People
		bots += st.Bots
		for _, r := range st.Referrers {
			if r.Host == "a.example" {
				refA += r.Count
			}
		}
	}
	if people != load.people.Load() || bots != load.bots.Load() || refA != load.refA.Load() {
		t.Errorf("stats people %d bots %d a.example %d; recorded %d, %d, %d",
			people, bots, refA, load.people.Load(), load.bots.Load(), load.refA.Load())
	}
	for _, r := range recs {
		closeRecorder(t, r)
	}
	if d := droppedMetric(t, reg); d != 0 {
		t.Errorf("dropped = %v, want 0", d)
	}
	assertStreamDrained(t, rdb, prefix)
	assertConsumers(t, rdb, prefix, 0)
}

// Acceptance 2: a consumer killed between its commit and its XACK, and
// another killed before its commit: the entries are taken over with
// XAUTOCLAIM and the total is still exact.
func TestClicksConsumerCrashRecovery(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	dsn := testenv.Postgres(t)
	sink := store.NewPostgresClickSink(testClickPool(t, dsn), 0)
	var afterCommit, beforeCommit atomic.Int32
	a := newTestRecorder(t, clicks.Config{Sink: sink, Redis: rdb, KeyPrefix: prefix, ClaimMinIdle: 300 * time.Millisecond,
		CrashAfterApply: func([]clicks.Batch) bool { return afterCommit.Add(1) == 1 }})
	b := newTestRecorder(t, clicks.Config{Sink: sink, Redis: rdb, KeyPrefix: prefix, ClaimMinIdle: 300 * time.Millisecond,
		CrashBeforeApply: func([]clicks.Batch) bool { return beforeCommit.Add(1) == 1 }})
	var load clickLoad
	next := load.run([]*clicks.Recorder{a, b}, 0, 3000)
	deadline := time.Now().Add(10 * time.Second)
	for afterCommit.Load() == 0 || beforeCommit.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("consumers not killed: after-commit hook %d, before-commit hook %d", afterCommit.Load(), beforeCommit.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := totalClicks(t, sink); got == 0 || got >= 3000 {
		t.Fatalf("after the kills the total is %d; want the dead consumer's first batch only", got)
	}
	// Both consumers are dead; a third node recovers their pending entries.
	c := newTestRecorder(t, clicks.Config{Sink: sink, Redis: rdb, KeyPrefix: prefix, ClaimMinIdle: 300 * time.Millisecond})
	load.run([]*clicks.Recorder{a, b, c}, next, 7000)
	waitTotal(t, sink, 10000, 30*time.Second)
	if c.Replayed.Load() == 0 {
		t.Error("the batch committed before the kill was not replayed: the after-commit crash was not exercised")
	}
	for _, r := range []*clicks.Recorder{a, b, c} {
		closeRecorder(t, r)
	}
	assertStreamDrained(t, rdb, prefix)
	// The killed consumers stay listed (with nothing pending); the live one left.
	assertConsumers(t, rdb, prefix, 2)
}

// A batch appended twice (a writer resending after a lost XADD reply) is
// counted once.
func TestClicksDuplicateStreamEntry(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	sink := newTestPostgresClickSink(t)
	clickList := make([]clicks.Click, 42)
	for i := range clickList {
		clickList[i] = clicks.Click{Code: testClickCodes[i%5], At: time.Now(), Class: clicks.ClassBrowser}
	}
	for range 2 {
		err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: prefix + ":clicks",
			Values: []string{clicks.FieldBatch, "writer-1", clicks.FieldClicks, clicks.EncodeClicks(clickList)}}).Err()
		if err != nil {
			t.Fatal(err)
		}
	}
	rec := newTestRecorder(t, clicks.Config{Sink: sink, Redis: rdb, KeyPrefix: prefix})
	waitTotal(t, sink, 42, 10*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for rec.Replayed.Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if rec.Replayed.Load() != 1 {
		t.Errorf("replayed = %d, want 1", rec.Replayed.Load())
	}
	closeRecorder(t, rec)
	assertStreamDrained(t, rdb, prefix)
}

// Acceptance 3: Redis restarted during the run (losing its data): clicks
// buffered meanwhile are delivered when it returns; drops equal the metric.
func TestClicksRedisRestart(t *testing.T) {
	srv := testenv.StartRedis(t)
	dsn := testenv.Postgres(t)
	sink := store.NewPostgresClickSink(testClickPool(t, dsn), 0)
	reg := prometheus.NewRegistry()
	client := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: 1, DialTimeout: 200 * time.Millisecond,
			ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
		t.Cleanup(func() { c.Close() })
		return c
	}
	const smallBuffer = 300
	big := newTestRecorder(t, clicks.Config{Sink: sink, Redis: client(), KeyPrefix: "t", Registerer: reg})
	small := newTestRecorder(t, clicks.Config{Sink: sink, Redis: client(), KeyPrefix: "t", Registerer: reg,
		Buffer: smallBuffer, BatchSize: 50})
	recs := []*clicks.Recorder{big, small}
	var load clickLoad
	// Before the restart every click must be counted, none dropped. The
	// small buffer would overflow under one burst of 2,000 (its writer can
	// be off the CPU, or waiting on an XADD, for the milliseconds the burst
	// lasts): so the clicks come in rounds no bigger than that buffer, each
	// counted before the next starts, and no round can fill it.
	next := 0
	for done := 0; done < 2000; {
		n := min(smallBuffer, 2000-done)
		next = load.run(recs, next, n)
		done += n
		waitTotal(t, sink, int64(done), 20*time.Second)
	}
	if d := big.Dropped() + small.Dropped(); d != 0 {
		t.Fatalf("dropped %d clicks while Redis was up", d)
	}

	srv.Stop()
	load.run(recs, next, 3000)
	time.Sleep(300 * time.Millisecond) // writers fail and back off
	// The small buffer (300 + what its writer holds, at most 16×50) cannot
	// hold its 1,500 clicks.
	if small.Dropped() == 0 {
		t.Fatal("the small buffer dropped nothing while Redis was down")
	}
	srv.Start()
	dropped := big.Dropped() + small.Dropped()
	waitTotal(t, sink, 5000-dropped, 30*time.Second)
	if m := droppedMetric(t, reg); m != float64(dropped) {
		t.Errorf("caddy_shortener_clicks_dropped_total = %v, recorders dropped %d", m, dropped)
	}
	t.Logf("dropped %d of 3000 clicks made while Redis was down", dropped)
	for _, r := range recs {
		closeRecorder(t, r)
	}
}

// doneCounter counts Redis commands (and pipelines) that have returned.
type doneCounter struct{ n atomic.Int64 }

func (h *doneCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *doneCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		defer h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h *doneCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		defer h.n.Add(1)
		return next(ctx, cmds)
	}
}

// Acceptance 4: Record does no network I/O. Redis is a server that accepts
// and never answers; every command waits for its 3s read timeout. All
// 10,000 Record calls return while no command has returned yet, so none of
// them waited on Redis; and NewRecorder did not wait either.
func TestClickRecordDoesNoIO(t *testing.T) {
	stall := testenv.StartStall(t)
	rdb := redis.NewClient(&redis.Options{Addr: stall.Addr(), DialTimeout: 3 * time.Second,
		ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	var done doneCounter
	rdb.AddHook(&done)
	reg := prometheus.NewRegistry()
	rec, err := clicks.NewRecorder(clicks.Config{Sink: newTestEmbeddedClickSink(t), Redis: rdb, KeyPrefix: "t",
		Registerer: reg, BatchSize: 100, BatchInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				rec.Record(clicks.Click{Code: testClickCodes[(g+i)%5], Class: clicks.ClassBrowser})
			}
		}()
	}
	wg.Wait()
	if n := done.n.Load(); n != 0 {
		t.Fatalf("%d Redis commands returned before the Record calls did: recording waited on Redis", n)
	}
	if rec.Dropped() != 0 {
		t.Fatalf("dropped %d with an empty 65536 buffer", rec.Dropped())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	closeStart := time.Now()
	if err := rec.Close(ctx); err == nil {
		t.Error("Close with a stalled Redis returned nil, want a deadline error")
	}
	if d := time.Since(closeStart); d > 5*time.Second {
		t.Errorf("Close took %v past a 200ms deadline", d)
	}
	// The writer gives up when its stalled command times out; the clicks it
	// could not deliver are counted as dropped, in the metric too.
	deadline := time.Now().Add(20 * time.Second)
	for rec.Dropped() != 10000 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if rec.Dropped() != 10000 || droppedMetric(t, reg) != 10000 {
		t.Errorf("after a failed shutdown flush: dropped %d, metric %v; want 10000 both", rec.Dropped(), droppedMetric(t, reg))
	}
	rec.Record(clicks.Click{Code: "code0"})
	if rec.Dropped() != 10001 {
		t.Errorf("Record after Close: dropped %d, want 10001", rec.Dropped())
	}
}

// ambiguousSink commits the first fails ApplyClicks calls and then reports
// an error, like a connection lost during COMMIT's reply.
type ambiguousSink struct {
	clicks.Sink
	fails atomic.Int32
}

func (s *ambiguousSink) ApplyClicks(ctx context.Context, b []clicks.Batch) (int, error) {
	n, err := s.Sink.ApplyClicks(ctx, b)
	if err == nil && s.fails.Add(-1) >= 0 {
		return 0, errors.New("connection reset during commit")
	}
	return n, err
}

// Without Redis the batches go straight to the sink, exact even when a
// commit's reply is lost and the batch is sent again.
func TestClicksStraightToSink(t *testing.T) {
	for name, open := range testClickSinks(t) {
		t.Run(name, func(t *testing.T) {
			sink := &ambiguousSink{Sink: open(t)}
			sink.fails.Store(3)
			var recs []*clicks.Recorder
			for range 3 {
				recs = append(recs, newTestRecorder(t, clicks.Config{Sink: sink}))
			}
			var load clickLoad
			load.run(recs, 0, 10000)
			waitTotal(t, sink, 10000, 30*time.Second)
			var replayed int64
			for _, r := range recs {
				replayed += r.Replayed.Load()
				closeRecorder(t, r)
				if r.Dropped() != 0 {
					t.Errorf("dropped %d", r.Dropped())
				}
			}
			// A resend may itself "fail", so three lost replies give at least
			// one skipped batch, not necessarily three.
			if replayed == 0 || sink.fails.Load() >= 0 {
				t.Errorf("replayed batches = %d, lost replies left %d; want some replayed and all 3 lost", replayed, sink.fails.Load()+1)
			}
		})
	}
}

// Close flushes what is buffered; with Redis, another instance's consumer
// counts it (a config reload hands over this way).
func TestClickCloseFlushes(t *testing.T) {
	slow := clicks.Config{BatchSize: 1000, BatchInterval: time.Hour}
	record := func(rec *clicks.Recorder, n int) {
		for i := range n {
			rec.Record(clicks.Click{Code: testClickCodes[i%5], Class: clicks.ClassBrowser})
		}
	}
	t.Run("sink", func(t *testing.T) {
		sink := newTestEmbeddedClickSink(t)
		cfg := slow
		cfg.Sink = sink
		rec := newTestRecorder(t, cfg)
		record(rec, 123)
		time.Sleep(50 * time.Millisecond)
		if got := totalClicks(t, sink); got != 0 {
			t.Fatalf("flushed %d before Close", got)
		}
		closeRecorder(t, rec)
		if got := totalClicks(t, sink); got != 123 {
			t.Errorf("after Close total = %d, want 123", got)
		}
	})
	t.Run("redis", func(t *testing.T) {
		rdb, prefix := testenv.Redis(t)
		sink := newTestPostgresClickSink(t)
		cfg := slow
		cfg.Sink, cfg.Redis, cfg.KeyPrefix = sink, rdb, prefix
		old := newTestRecorder(t, cfg)
		record(old, 2345)
		closeRecorder(t, old)
		// The new config's recorder picks the stream up.
		cfg.BatchInterval = 50 * time.Millisecond
		newTestRecorder(t, cfg)
		waitTotal(t, sink, 2345, 20*time.Second)
	})
}

func TestClickRecorderConfig(t *testing.T) {
	sink := newTestEmbeddedClickSink(t)
	if _, err := clickSinkFor(nil, 0); err == nil {
		t.Error("clickSinkFor(nil, 0) = nil error")
	}
	if _, err := clicks.NewRecorder(clicks.Config{}); err == nil {
		t.Error("NewClickRecorder without a sink: nil error")
	}
	if _, err := clicks.NewRecorder(clicks.Config{Sink: sink, Buffer: -1}); err == nil {
		t.Error("NewClickRecorder with a negative buffer: nil error")
	}
	// Two recorders on one registry share the counter (config reloads).
	reg := prometheus.NewRegistry()
	a := newTestRecorder(t, clicks.Config{Sink: sink, Registerer: reg, Buffer: 1, BatchInterval: time.Hour})
	b := newTestRecorder(t, clicks.Config{Sink: sink, Registerer: reg, Buffer: 1, BatchInterval: time.Hour})
	for i := range 50 {
		a.Record(clicks.Click{Code: fmt.Sprint("c", i)})
		b.Record(clicks.Click{Code: fmt.Sprint("c", i)})
	}
	if got, want := droppedMetric(t, reg), float64(a.Dropped()+b.Dropped()); got != want || want == 0 {
		t.Errorf("shared metric = %v, recorders dropped %v", got, want)
	}
}
