package shortener

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zaptest/observer"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// Tests of issue 13's bounded click analytics: the referrer cap, retention
// with all-time totals, and the byte bounds of the buffer and the stream.

// cappedSinks returns, per store, n sinks writing the same clicks: for
// PostgreSQL each on its own pool (an instance each), for bbolt one sink
// (one process owns the file) shared by the n writers.
func cappedSinks(limit, n int) map[string]func(t *testing.T) []clicks.Sink {
	return map[string]func(t *testing.T) []clicks.Sink{
		"postgres": func(t *testing.T) []clicks.Sink {
			dsn := testenv.Postgres(t)
			var sinks []clicks.Sink
			for range n {
				sinks = append(sinks, store.NewPostgresClickSink(testClickPool(t, dsn), limit))
			}
			return sinks
		},
		"embedded": func(t *testing.T) []clicks.Sink {
			st, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			s, err := clickSinkFor(st, limit)
			if err != nil {
				t.Fatal(err)
			}
			sinks := make([]clicks.Sink, n)
			for i := range sinks {
				sinks[i] = s
			}
			return sinks
		},
	}
}

// splitOther separates the named referrer rows from the "other" row.
func splitOther(refs []clicks.ReferrerClicks) (named []clicks.ReferrerClicks, other int64) {
	for _, r := range refs {
		if r.Host == clicks.OtherReferrer {
			other = r.Count
		} else {
			named = append(named, r)
		}
	}
	return named, other
}

// Four instances count 40 distinct referrer hosts for one link and day at
// once: exactly the cap of 5 hosts get rows, each with every click it
// sent, and all other clicks are in "other".
func TestClickReferrerCapConcurrent(t *testing.T) {
	const limit, writers, batches, perBatch, hosts = 5, 4, 10, 12, 40
	for name, open := range cappedSinks(limit, writers) {
		t.Run(name, func(t *testing.T) {
			sinks := open(t)
			ctx := context.Background()
			day := clicks.DayFloor(time.Now()).Add(-24 * time.Hour)
			var mu sync.Mutex
			sent := map[string]int64{}
			var wg sync.WaitGroup
			for w, s := range sinks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for b := range batches {
						clickList := make([]clicks.Click, 0, perBatch)
						for i := range perBatch {
							host := fmt.Sprintf("h%03d.example", (w*7+b*3+i)%hosts)
							clickList = append(clickList, clicks.Click{Code: "capped1", At: day.Add(time.Duration(b*60+i) * time.Second), Referrer: host})
						}
						if _, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: fmt.Sprintf("w%d-b%d", w, b), Clicks: clickList}}); err != nil {
							t.Errorf("ApplyClicks: %v", err)
							return
						}
						mu.Lock()
						for _, c := range clickList {
							sent[c.Referrer]++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			st, err := sinks[0].ClickStats(ctx, "capped1", day, day.Add(24*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			named, other := splitOther(st.Referrers)
			if len(named) != limit {
				t.Errorf("%d named referrer hosts stored, want the cap %d: %+v", len(named), limit, st.Referrers)
			}
			sum := other
			for _, r := range named {
				if r.Count != sent[r.Host] {
					t.Errorf("host %s counted %d clicks, sent %d", r.Host, r.Count, sent[r.Host])
				}
				sum += r.Count
			}
			if want := int64(writers * batches * perBatch); sum != want || st.Total != want || st.AllTime == nil || st.AllTime.Total != want {
				t.Errorf("referrer clicks %d (other %d), window total %d, all time %+v; want %d each", sum, other, st.Total, st.AllTime, want)
			}
			// A host arriving after the day is full goes to "other"; a
			// stored host keeps counting; the next day has room again.
			late := []clicks.Click{{Code: "capped1", At: day.Add(time.Hour), Referrer: "late.example"}}
			if len(named) > 0 {
				late = append(late, clicks.Click{Code: "capped1", At: day.Add(time.Hour), Referrer: named[0].Host})
			}
			late = append(late, clicks.Click{Code: "capped1", At: day.Add(25 * time.Hour), Referrer: "late.example"})
			if _, err := sinks[1].ApplyClicks(ctx, []clicks.Batch{{ID: "late", Clicks: late}}); err != nil {
				t.Fatal(err)
			}
			st2, err := sinks[0].ClickStats(ctx, "capped1", day, day.Add(24*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			named2, other2 := splitOther(st2.Referrers)
			if len(named2) != limit || other2 != other+1 {
				t.Errorf("after a late host: %d named, other %d; want %d, %d", len(named2), other2, limit, other+1)
			}
			next, err := sinks[0].ClickStats(ctx, "capped1", day.Add(24*time.Hour), day.Add(48*time.Hour))
			if err != nil || len(next.Referrers) != 1 || next.Referrers[0] != (clicks.ReferrerClicks{Host: "late.example", Count: 1}) {
				t.Errorf("next day referrers = %+v, %v; want late.example 1", next.Referrers, err)
			}
		})
	}
}

// A host that is not one (too long, odd bytes) handed to a sink directly
// is never stored: it counts as "other".
func TestClickSinkHostileReferrer(t *testing.T) {
	for name, open := range testClickSinks(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			at := clicks.DayFloor(time.Now()).Add(-time.Hour)
			var clickList []clicks.Click
			for _, ref := range []string{strings.Repeat("a", 300), "ev\x00il.example", "Upper.example", "a b", "ok.example"} {
				clickList = append(clickList, clicks.Click{Code: "hostile", At: at, Referrer: ref})
			}
			if _, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "h-1", Clicks: clickList}}); err != nil {
				t.Fatal(err)
			}
			st, err := s.ClickStats(ctx, "hostile", at, at.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			want := []clicks.ReferrerClicks{{Host: clicks.OtherReferrer, Count: 4}, {Host: "ok.example", Count: 1}}
			if fmt.Sprint(st.Referrers) != fmt.Sprint(want) {
				t.Errorf("referrers = %+v, want %+v", st.Referrers, want)
			}
		})
	}
}

// pagedPruner records each page a recorder's pruner asks for, and the
// log entries written before the first.
type pagedPruner struct {
	clicks.Sink
	p    clicks.ClickPruner
	logs *observer.ObservedLogs

	mu          sync.Mutex
	pages       []int
	logsAtFirst []observer.LoggedEntry
	passes      atomic.Int32
}

func (s *pagedPruner) PruneClicks(ctx context.Context, cutoff clicks.ClickCutoffs, limit int) (int, bool, error) {
	s.mu.Lock()
	if s.pages == nil {
		s.logsAtFirst = s.logs.All()
	}
	s.mu.Unlock()
	n, done, err := s.p.PruneClicks(ctx, cutoff, limit)
	s.mu.Lock()
	s.pages = append(s.pages, n)
	s.mu.Unlock()
	if done {
		s.passes.Add(1)
	}
	return n, done, err
}

// Retention deletes the rollups dated before the cutoff day, in pages of
// at most PrunePage rows, after logging the cutoff; the all-time totals
// and the rows from the cutoff on stay.
func TestClickRetentionPrunesInPages(t *testing.T) {
	for name, open := range testClickSinks(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			now := time.Now().UTC()
			const retention = 30 * 24 * time.Hour
			cutoff := clicks.DayFloor(now.Add(-retention))
			var clickList []clicks.Click
			// 3 old days: 72 hourly rows, 6 referrer rows, 3 referrer days, and
			// per day and dimension one value (unknown) and its count: 18 + 18.
			for d := 1; d <= 3; d++ {
				for h := range 24 {
					at := cutoff.Add(time.Duration(-24*d+h) * time.Hour)
					clickList = append(clickList, clicks.Click{Code: "old1", At: at, Referrer: fmt.Sprintf("r%d.example", h%2), Class: clicks.UAClass(h % 2)})
				}
			}
			kept := []clicks.Click{
				{Code: "old1", At: cutoff, Referrer: "r0.example"},
				{Code: "old1", At: now.Add(-time.Hour), Referrer: "r1.example"},
			}
			if _, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "r-1", Clicks: clickList[:40]}, {ID: "r-2", Clicks: clickList[40:]}, {ID: "r-3", Clicks: kept}}); err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zap.DebugLevel)
			p := &pagedPruner{Sink: s, p: s.(clicks.ClickPruner), logs: logs}
			newTestRecorder(t, clicks.Config{Sink: p, Retention: retention, PruneDelay: time.Millisecond, PruneInterval: time.Hour,
				PrunePage: 10, Logger: slog.New(zapslog.NewHandler(core)), Now: func() time.Time { return now }})
			deadline := time.Now().Add(20 * time.Second)
			for p.passes.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no prune pass finished")
				}
				time.Sleep(10 * time.Millisecond)
			}
			p.mu.Lock()
			pages, before := p.pages, p.logsAtFirst
			p.mu.Unlock()
			var sum int
			for _, n := range pages {
				if n > 10 {
					t.Errorf("a page deleted %d rows, more than PrunePage 10", n)
				}
				sum += n
			}
			dims := len(clicks.ClickDimensions) - 2 // not rule and variant: these clicks had none
			want := 72 + 6 + 3 + 3*2*dims           // dimension values and their link-days, 3 link-days
			if name == "embedded" {                 // and its counters across links: 3 link-days, 3 days of the dimensions and 2 referrers
				want += 3 + 3*(dims+2)
			}
			if sum != want || len(pages) < want/10 {
				t.Errorf("pages %v deleted %d rows, want %d in at least %d pages", pages, sum, want, want/10)
			}
			if len(before) != 1 || before[0].Level != zap.InfoLevel || !strings.Contains(before[0].Message, "pruning") ||
				before[0].ContextMap()["cutoff"] != cutoff.Format(time.DateOnly) {
				t.Errorf("logs before the first prune = %+v, want one info line naming the cutoff %s", before, cutoff.Format(time.DateOnly))
			}
			old, err := s.ClickStats(ctx, "old1", cutoff.Add(-4*24*time.Hour), cutoff)
			if err != nil || len(old.Hourly) != 0 || len(old.Referrers) != 0 || old.Total != 0 {
				t.Errorf("stats before the cutoff = %+v, %v; want nothing left", old, err)
			}
			recent, err := s.ClickStats(ctx, "old1", cutoff, now)
			if err != nil || recent.Total != 2 || len(recent.Referrers) != 2 {
				t.Errorf("stats from the cutoff = %+v, %v; want the 2 kept clicks", recent, err)
			}
			if want := int64(len(clickList) + len(kept)); recent.AllTime == nil || recent.AllTime.Total != want || recent.AllTime.Bots != 36 {
				t.Errorf("all-time totals = %+v, want total %d with 36 bots", recent.AllTime, want)
			}
			if n, err := s.ClickTotal(ctx, "old1"); err != nil || n != int64(len(clickList)+len(kept)) {
				t.Errorf("ClickTotal = %d, %v; want %d", n, err, len(clickList)+len(kept))
			}
		})
	}
}

// failingSink fails every call while fail is set: a store that is down.
type failingSink struct {
	clicks.Sink
	fail atomic.Bool
}

func (s *failingSink) ApplyClicks(ctx context.Context, b []clicks.Batch) (int, error) {
	if s.fail.Load() {
		return 0, errors.New("store down")
	}
	return s.Sink.ApplyClicks(ctx, b)
}

// metricValue returns a sample of reg: a counter or gauge with the given
// label value ("" for none).
func metricValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("%s{%s} not registered", name, label)
	return 0
}

// waitMetric polls a sample until it equals want.
func waitMetric(t *testing.T, reg *prometheus.Registry, name, label string, want float64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := metricValue(t, reg, name, label)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s{%s} = %v, want %v", name, label, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// longHost is a referrer host of 248 bytes: a click with it and a 7-byte
// Code is held for 128+7+248 = 383 bytes (plus its user agent's),
// encoded for 64+7+248 = 319.
var longHost = strings.Repeat("a", 240) + ".example"

// With the store down, the buffer holds at most clicks_buffer_bytes of
// clicks (those being flushed included); the rest are dropped and counted
// by reason; out-of-bounds clicks are dropped as invalid; the gauges show
// what is held; when the store is back exactly the held clicks count.
func TestClickBufferBytesBound(t *testing.T) {
	sink := &failingSink{Sink: new(memClickSink)}
	sink.fail.Store(true)
	reg := prometheus.NewRegistry()
	rec := newTestRecorder(t, clicks.Config{Sink: sink, BufferBytes: MinClicksBufferBytes, BatchSize: 100, Registerer: reg})
	c := clicks.Click{Code: "abc1234", At: time.Now(), Referrer: longHost, UA: strings.Repeat("u", 100), Addr: netip.MustParseAddr("192.0.2.1")}
	size := clicks.ClickSize(c)
	if size != 383+100 {
		t.Fatalf("clickSize = %d, want 483 (the user agent counts)", size)
	}
	const sent = 2000
	for range sent {
		rec.Record(c)
	}
	fit := int64(MinClicksBufferBytes) / size
	if _, held := rec.Buffered(); held != fit*size {
		t.Errorf("held %d bytes, want %d (%d clicks of %d bytes within %d)", held, fit*size, fit, size, MinClicksBufferBytes)
	}
	if d := rec.Dropped(); d != sent-fit {
		t.Errorf("dropped %d, want %d", d, sent-fit)
	}
	for _, bad := range []clicks.Click{
		{Code: strings.Repeat("a", link.MaxCustomCodeLen+1)},
		{Code: "abc1234", Referrer: strings.Repeat("b", clicks.MaxReferrerHost+1)},
		{Code: "abc1234", Referrer: "tab\there"},
		{Code: "ab\ncd"},
		{Code: "abc1234", Class: clicks.ClassOther + 1},
		{Code: "abc1234", UA: strings.Repeat("u", clicks.MaxUserAgent+1)},
	} {
		rec.Record(bad)
	}
	if v := metricValue(t, reg, "caddy_shortener_clicks_dropped_total", clicks.DropBufferFull); v != float64(sent-fit) {
		t.Errorf("dropped{buffer_full} = %v, want %d", v, sent-fit)
	}
	if v := metricValue(t, reg, "caddy_shortener_clicks_dropped_total", clicks.DropInvalid); v != 6 {
		t.Errorf("dropped{invalid} = %v, want 6", v)
	}
	waitMetric(t, reg, "caddy_shortener_clicks_buffered_bytes", "", float64(fit*size))
	waitMetric(t, reg, "caddy_shortener_clicks_buffered", "", float64(fit))
	sink.fail.Store(false)
	waitCodeTotal(t, sink, "abc1234", fit)
	waitMetric(t, reg, "caddy_shortener_clicks_buffered_bytes", "", 0)
}

// streamEntries sums the stream's entries as the append script counts
// them, and the clicks they hold.
func streamEntries(t *testing.T, ctx context.Context, rec *clicks.Recorder) (bytes, clickList int64) {
	t.Helper()
	msgs, err := rec.Cfg.Redis.XRange(ctx, rec.Stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		id, _ := m.Values[clicks.FieldBatch].(string)
		data, _ := m.Values[clicks.FieldClicks].(string)
		bytes += int64(len(id) + len(data) + clicks.StreamEntryOverhead)
		clickList += int64(strings.Count(data, "\n"))
	}
	return bytes, clickList
}

// With every consumer unable to count, the stream holds at most
// clicks_stream_bytes of entries; the clicks of trimmed entries are
// counted as dropped (stream_trimmed), so what is in the stream plus what
// was trimmed is exactly what was sent, and once the store is back exactly
// the rest is counted.
func TestClickStreamBytesBound(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	sink := &failingSink{Sink: new(memClickSink)}
	sink.fail.Store(true)
	reg := prometheus.NewRegistry()
	rec := newTestRecorder(t, clicks.Config{Sink: sink, Redis: rdb, KeyPrefix: prefix, StreamMaxBytes: MinClicksStreamBytes,
		BatchSize: 50, BatchInterval: 10 * time.Millisecond, Registerer: reg})
	const sent = 3000
	for i := range sent {
		rec.Record(clicks.Click{Code: "abc1234", At: time.Now(), Referrer: longHost})
		if i%500 == 499 {
			time.Sleep(20 * time.Millisecond) // let the writer flush: not a buffer test
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if n, b := rec.Buffered(); n == 0 && b == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not flush")
		}
		time.Sleep(10 * time.Millisecond)
	}
	bytes, inStream := streamEntries(t, ctx, rec)
	trimmed := metricValue(t, reg, "caddy_shortener_clicks_dropped_total", clicks.DropStreamTrimmed)
	if bytes > MinClicksStreamBytes {
		t.Errorf("stream entries hold %d bytes, cap %d", bytes, MinClicksStreamBytes)
	}
	if trimmed == 0 || int64(trimmed)+inStream != sent || rec.Dropped() != int64(trimmed) {
		t.Errorf("in stream %d + trimmed %v (recorder %d) != sent %d", inStream, trimmed, rec.Dropped(), sent)
	}
	if mem, err := rdb.MemoryUsage(ctx, rec.Stream).Result(); err == nil {
		t.Logf("stream: %d entry bytes as counted, %d clicks; MEMORY USAGE %d bytes", bytes, inStream, mem)
	}
	sink.fail.Store(false)
	waitCodeTotal(t, sink, "abc1234", inStream)
}

// A stream entry no consumer can decode is skipped and its clicks counted.
func TestClickStreamMalformedCounted(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	sink := new(memClickSink)
	rec := newTestRecorder(t, clicks.Config{Sink: sink, Redis: rdb, KeyPrefix: prefix, Registerer: reg})
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: rec.Stream, Values: []string{clicks.FieldBatch, "x-1", clicks.FieldClicks, "no tabs\n", clicks.FieldCount, "7"}}).Err(); err != nil {
		t.Fatal(err)
	}
	rec.Record(clicks.Click{Code: "abc1234", At: time.Now()})
	waitCodeTotal(t, sink, "abc1234", 1)
	waitMetric(t, reg, "caddy_shortener_clicks_dropped_total", clicks.DropMalformed, 7)
}
