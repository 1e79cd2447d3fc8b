package shortener

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/shortener/codefilter"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// How the code filter is filled and kept current.
const (
	filterPage         = 10000   // codes per listing query: milliseconds, far within statement_timeout
	filterMinCapacity  = 1 << 16 // codes a filter is sized for at least (120 KiB)
	filterRebuildEvery = time.Hour
	filterMaxFP        = 0.001 // estimated false-positive rate that triggers a larger rebuild

	// At start the delta sync reads the newest links again, from this many
	// sequence numbers below the highest: writers still committing then
	// are found like any gap.
	seqStartOverlap = 1000
)

// filterSyncer fills a codeFilter and keeps it current, on one goroutine:
// each tick a delta sync (links created since the last one), then pages of
// a full build while one is due, until most of the tick is spent. Every
// query is one short page, so the delta sync keeps its pace during a
// rebuild of a large store.
type filterSyncer struct {
	f       *codeFilter
	lister  link.CodeLister
	every   time.Duration
	now     func() time.Time
	logger  *zap.Logger
	page    int           // codes per query: filterPage
	rebuild time.Duration // filterRebuildEvery

	started bool // cursor placed
	cursor  codefilter.SeqCursor
	codes   int64        // codes in the served filter: listed at its build, plus new links since
	build   *filterBuild // in progress, or nil
	builtAt time.Time
	failing bool // the last query failed (logged at warn once per outage)
}

// filterBuild is a full build in progress.
type filterBuild struct {
	b       *codefilter.Bloom
	after   string // last code listed
	listed  int64
	created int64 // new links the delta sync found meanwhile
	began   time.Time
}

func (s *filterSyncer) run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	defer func() { s.f.m.codes.Sub(float64(s.codes)) }()
	for {
		s.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick runs one delta sync and, while a build is due, build pages for up
// to three quarters of the interval.
func (s *filterSyncer) tick(ctx context.Context) {
	deadline := time.Now().Add(s.every * 3 / 4)
	if !s.started {
		if !s.result(ctx, s.begin(ctx)) {
			return
		}
	}
	if !s.result(ctx, s.delta(ctx)) {
		return
	}
	if s.build == nil && s.rebuildDue() {
		s.startBuild()
	}
	for s.build != nil && ctx.Err() == nil && time.Now().Before(deadline) {
		if !s.result(ctx, s.buildPage(ctx)) {
			return
		}
	}
}

// result counts and logs a failed query: at warn once per outage, then at
// debug until a query succeeds again.
func (s *filterSyncer) result(ctx context.Context, err error) bool {
	switch {
	case err == nil:
		if s.failing {
			s.failing = false
			s.logger.Info("code filter sync recovered")
		}
		return true
	case ctx.Err() != nil:
		return false // stopping
	}
	s.f.m.syncErrors.Inc()
	if !s.failing {
		s.failing = true
		s.logger.Warn("code filter sync failed; unknown codes are looked up in Redis and the store until it recovers", zap.Error(err))
	} else if c := s.logger.Check(zap.DebugLevel, "code filter sync failed again"); c != nil {
		c.Write(zap.Error(err))
	}
	return false
}

// begin places the delta cursor below the newest links, before the first
// build lists anything: a link committed during the build is found by the
// listing or by the delta sync.
func (s *filterSyncer) begin(ctx context.Context) error {
	qctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	last, err := s.lister.LastSeq(qctx)
	if err != nil {
		return err
	}
	s.cursor.Place(max(0, last-seqStartOverlap))
	s.started = true
	return nil
}

// delta adds the links created since the last sync, and marks the filter
// current as of the sync's start.
func (s *filterSyncer) delta(ctx context.Context) error {
	start := s.now()
	from := s.cursor.From(start.UnixNano())
	for {
		qctx, cancel := context.WithTimeout(ctx, storeTimeout)
		page, err := s.lister.CodesSince(qctx, from, s.page)
		cancel()
		if err != nil {
			return err
		}
		var created int64
		for _, sc := range page {
			s.f.add(sc.Code)
			if sc.Seq > s.cursor.Top() {
				created++
			}
		}
		s.cursor.Saw(page, start.UnixNano())
		s.countNew(created)
		if len(page) < s.page {
			break
		}
		from = page[len(page)-1].Seq
	}
	s.f.syncedAt.Store(start.UnixNano())
	return nil
}

func (s *filterSyncer) countNew(n int64) {
	if n == 0 {
		return
	}
	if s.build != nil {
		s.build.created += n
	}
	if s.f.cur.Load() != nil {
		s.codes += n
		s.f.m.codes.Add(float64(n))
	}
}

// rebuildDue: no filter yet, the served one is an hour old, or its
// estimated false-positive rate passed filterMaxFP (the store outgrew it).
func (s *filterSyncer) rebuildDue() bool {
	cur := s.f.cur.Load()
	return cur == nil || s.now().Sub(s.builtAt) >= s.rebuild || cur.FPRate() > filterMaxFP
}

// startBuild sizes a new filter for the codes known so far (the creation
// sequence counts the links created since the store numbered them) with a
// quarter to spare, and routes every add to it from now on.
func (s *filterSyncer) startBuild() {
	n := max(s.codes, s.cursor.Top())
	b := codefilter.NewBloom(int(min(max(n+n/4, filterMinCapacity), codefilter.BloomMaxCapacity)))
	s.build = &filterBuild{b: b, began: s.now()}
	s.f.m.bytes.Add(float64(b.Bytes()))
	s.f.next.Store(b)
}

// buildPage lists one page into the build and, after the last, serves it.
func (s *filterSyncer) buildPage(ctx context.Context) error {
	bd := s.build
	qctx, cancel := context.WithTimeout(ctx, storeTimeout)
	page, err := s.lister.ScanCodes(qctx, bd.after, s.page)
	cancel()
	if err != nil {
		return err
	}
	for _, code := range page {
		bd.b.Add(code)
	}
	bd.listed += int64(len(page))
	if len(page) == s.page {
		bd.after = page[len(page)-1]
		return nil
	}
	old := s.f.cur.Swap(bd.b)
	s.f.next.Store(nil)
	if old != nil {
		s.f.m.bytes.Sub(float64(old.Bytes()))
	}
	codes := bd.listed + bd.created
	s.f.m.codes.Add(float64(codes - s.codes))
	s.codes, s.build, s.builtAt = codes, nil, bd.began
	s.f.m.builds.Inc()
	s.logger.Info("code filter built",
		zap.Int64("codes", codes), zap.Int64("bytes", bd.b.Bytes()),
		zap.Float64("estimated_false_positive_rate", bd.b.FPRate()),
		zap.Duration("took", s.now().Sub(bd.began)))
	return nil
}
