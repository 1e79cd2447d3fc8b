package shortener

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/promreg"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/shortener/codefilter"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Bounds of code_filter_sync: the longest a link inserted by another writer
// (or created on an instance whose message was lost) can answer 404 here.
const (
	DefaultCodeFilterSync = 2 * time.Second
	MinCodeFilterSync     = 100 * time.Millisecond
	MaxCodeFilterSync     = 5 * time.Second
)

// sourceFilter is the metrics and X-Shortener-Source value of a code the
// filter answered.
const sourceFilter = "filter"

// codeFilter tells, without I/O, that a code is surely not stored, so a
// scan of unknown codes costs neither a Redis round trip, nor a store
// query, nor a negative-cache key. It is a hint, never an authority: it
// holds every code the store listed and every code created since (this
// instance's creates before they are answered, other instances' through
// the invalidation channel, every writer's through the delta sync), so it
// errs only by false positives, and those take the lookup path as before.
//
// It answers "absent" only once a full build has completed and while its
// delta sync is current (see mayExist); otherwise every code may exist.
type codeFilter struct {
	cur  atomic.Pointer[codefilter.Bloom] // served; nil until the first build completes
	next atomic.Pointer[codefilter.Bloom] // a build in progress: gets every add too

	// syncedAt is when the last successful delta sync started (Unix
	// nanoseconds of now): every link committed before it is in the filter.
	syncedAt   atomic.Int64
	staleAfter int64 // nanoseconds after syncedAt the filter stops answering
	now        func() time.Time

	m    *filterMetrics
	stop context.CancelFunc
	done chan struct{}
}

// mayExist reports whether code may be stored: false only when the filter
// is built, current, and has never been told about code. A nil filter
// (code_filter off) says every code may exist.
func (f *codeFilter) mayExist(code string) bool {
	if f == nil {
		return true
	}
	b := f.cur.Load()
	if b == nil || f.now().UnixNano()-f.syncedAt.Load() > f.staleAfter {
		return true
	}
	return b.Has(code)
}

// add records a committed code in the served filter and in a build in
// progress. Called only after the code is committed, so a build that starts
// after add read next lists the code itself.
func (f *codeFilter) add(code string) {
	if f == nil {
		return
	}
	if b := f.next.Load(); b != nil {
		b.Add(code)
	}
	if b := f.cur.Load(); b != nil {
		b.Add(code)
	}
}

// close stops the sync and waits for it; the filter then answers as if off.
func (f *codeFilter) close() {
	if f == nil || f.stop == nil {
		return
	}
	f.stop()
	<-f.done
	f.stop = nil
	for _, b := range []*codefilter.Bloom{f.cur.Swap(nil), f.next.Swap(nil)} {
		if b != nil {
			f.m.bytes.Sub(float64(b.Bytes()))
		}
	}
}

// startCodeFilter builds the handler's code filter in the background from
// the store's listing and keeps it current; until the first build
// completes, lookups take the path they took without one. A store that
// lists no codes gets no filter.
func (h *Handler) startCodeFilter(ctx caddy.Context) error {
	if h.CodeFilterOff {
		return nil
	}
	s := unshared(h.store)
	lister, ok := s.(link.CodeLister)
	if !ok {
		h.logger.Info("no code filter: the store given to the handler lists no codes; unknown codes are looked up",
			zap.String("store", fmt.Sprintf("%T", s)))
		return nil
	}
	m, err := newFilterMetrics(ctx.GetMetricsRegistry())
	if err != nil {
		return fmt.Errorf("shortener code filter metrics: %w", err)
	}
	every := time.Duration(h.CodeFilterSync)
	if every == 0 {
		every = DefaultCodeFilterSync
	}
	f := &codeFilter{staleAfter: int64(every + every/2), now: h.now, m: m, done: make(chan struct{})}
	sctx, stop := context.WithCancel(context.Background())
	f.stop = stop
	sy := &filterSyncer{f: f, lister: lister, every: every, now: h.now, logger: h.logger, page: filterPage, rebuild: filterRebuildEvery}
	if h.tuneFilter != nil {
		h.tuneFilter(sy)
	}
	go func() {
		defer close(f.done)
		sy.run(sctx)
	}()
	h.cache.codes = f
	return nil
}

// filterMetrics are the code filter's collectors. Gauges are changed by
// differences, so several handlers (and a reload's old and new handler)
// add up.
type filterMetrics struct {
	codes      prometheus.Gauge
	bytes      prometheus.Gauge
	builds     prometheus.Counter
	syncErrors prometheus.Counter
}

func newFilterMetrics(reg *prometheus.Registry) (*filterMetrics, error) {
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "caddy", Subsystem: "shortener", Name: name, Help: help})
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "caddy", Subsystem: "shortener", Name: name, Help: help})
	}
	m := &filterMetrics{
		codes:      gauge("code_filter_codes", "Codes held by the code filters (links listed at the last build and created since), summed over handlers."),
		bytes:      gauge("code_filter_bytes", "Memory of the code filters' bit arrays, builds in progress included."),
		builds:     counter("code_filter_builds_total", "Full builds of a code filter from the store's listing (at start, hourly, and when the estimated false-positive rate passes 0.1%)."),
		syncErrors: counter("code_filter_sync_errors_total", "Failed queries of the code filter's sync; while its delta sync is failing, a filter stops answering unknown codes."),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.codes, err = promreg.Register(reg, m.codes); err != nil {
		return nil, err
	}
	if m.bytes, err = promreg.Register(reg, m.bytes); err != nil {
		return nil, err
	}
	if m.builds, err = promreg.Register(reg, m.builds); err != nil {
		return nil, err
	}
	if m.syncErrors, err = promreg.Register(reg, m.syncErrors); err != nil {
		return nil, err
	}
	return m, nil
}
