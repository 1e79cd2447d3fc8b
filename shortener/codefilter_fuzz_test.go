package shortener

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/shortener/codefilter"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// fakeLister is an exact in-memory oracle of a store's creation order:
// links visible at once, numbers taken by writers that commit later, and
// numbers lost to failed inserts.
type fakeLister struct {
	mu      sync.Mutex
	seq     int64
	rows    []fakeRow // visible
	pending []fakeRow // numbered, not committed yet
	fail    bool      // the next call fails
}

type fakeRow struct {
	seq        int64
	code       string
	reservedAt time.Time
	late       bool // numbered, then committed later
}

var errFakeDown = errors.New("fake store down")

// create commits a new link at once (as the API's INSERT does).
func (s *fakeLister) create(now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	r := fakeRow{s.seq, fmt.Sprint("c", s.seq), now, false}
	s.rows = append(s.rows, r)
	return r.code
}

// reserve numbers a link whose writer commits later.
func (s *fakeLister) reserve(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.pending = append(s.pending, fakeRow{s.seq, fmt.Sprint("c", s.seq), now, true})
}

// commit makes the i-th pending link visible.
func (s *fakeLister) commit(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return
	}
	i %= len(s.pending)
	r := s.pending[i]
	s.pending = slices.Delete(s.pending, i, i+1)
	s.rows = append(s.rows, r)
}

func (s *fakeLister) failNext() bool {
	if s.fail {
		s.fail = false
		return true
	}
	return false
}

func (s *fakeLister) ScanCodes(ctx context.Context, after string, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failNext() {
		return nil, errFakeDown
	}
	var codes []string
	for _, r := range s.rows {
		if r.code > after {
			codes = append(codes, r.code)
		}
	}
	sort.Strings(codes)
	return codes[:min(limit, len(codes))], nil
}

func (s *fakeLister) CodesSince(ctx context.Context, after int64, limit int) ([]link.SeqCode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failNext() {
		return nil, errFakeDown
	}
	var out []link.SeqCode
	for _, r := range s.rows {
		if r.seq > after {
			out = append(out, link.SeqCode{Seq: r.seq, Code: r.code})
		}
	}
	slices.SortFunc(out, func(a, b link.SeqCode) int { return int(a.Seq - b.Seq) })
	return out[:min(limit, len(out))], nil
}

func (s *fakeLister) LastSeq(ctx context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failNext() {
		return 0, errFakeDown
	}
	var last int64
	for _, r := range s.rows {
		last = max(last, r.seq)
	}
	return last, nil
}

func testFilterMetrics(t testing.TB) *filterMetrics {
	t.Helper()
	m, err := newFilterMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// FuzzCodeFilter drives the filter's sync step by step against fakeLister
// and checks it against the oracle: a code added (a local create) is never
// missed, and after each delta sync every link the store shows is in the
// served filter, unless its writer committed it more than codefilter.SeqGapGrace after
// taking its number (documented: found by the next rebuild).
//
// Each byte is an operation: its value mod 8 picks it, the rest is its
// argument.
func FuzzCodeFilter(f *testing.F) {
	f.Add([]byte{0, 1, 4, 0, 2, 1, 4, 3, 4, 5, 4, 4, 0, 4})
	f.Add([]byte{2, 2, 1, 4, 4, 4, 3 + 8, 4, 6 + 8*20, 4, 3, 4, 6 + 8*31, 6 + 8*31, 4, 5, 4, 4, 4})
	f.Add([]byte{7, 4, 0, 7, 4, 1, 1, 4, 7, 4, 5, 0, 4, 0, 4, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 200 {
			ops = ops[:200] // gap ranges stay below codefilter.MaxSeqGaps
		}
		clock := time.Unix(1_700_000_000, 0)
		now := func() time.Time { return clock }
		st := &fakeLister{}
		cf := &codeFilter{staleAfter: int64(3 * time.Second), now: now, m: testFilterMetrics(t)}
		sy := &filterSyncer{f: cf, lister: st, every: 2 * time.Second, now: now, logger: zap.NewNop(), page: 3, rebuild: time.Hour}
		ctx := context.Background()
		added := map[string]bool{}
		for _, op := range ops {
			arg := int(op / 8)
			switch op % 8 {
			case 0: // a create on this instance
				code := st.create(clock)
				cf.add(code)
				added[code] = true
			case 1: // another writer's insert
				st.create(clock)
			case 2:
				st.reserve(clock)
			case 3:
				st.commit(arg)
			case 4:
				fuzzTick(t, sy, st, ctx, clock)
			case 5: // a rebuild, whatever its trigger
				if sy.started && sy.build == nil {
					sy.startBuild()
				}
			case 6:
				clock = clock.Add(time.Duration(arg) * time.Second)
			case 7:
				st.fail = true
			}
			if cur := cf.cur.Load(); cur != nil {
				for code := range added {
					if !cur.Has(code) {
						t.Fatalf("added code %s missing from the served filter", code)
					}
				}
			}
		}
	})
}

// fuzzTick runs one tick of the sync (one build page instead of pages
// until a deadline) and checks the oracle after a successful delta.
func fuzzTick(t *testing.T, sy *filterSyncer, st *fakeLister, ctx context.Context, clock time.Time) {
	t.Helper()
	if !sy.started && sy.begin(ctx) != nil {
		return
	}
	if sy.delta(ctx) != nil {
		return
	}
	if sy.f.syncedAt.Load() != clock.UnixNano() {
		t.Fatalf("syncedAt = %d after a delta sync at %d", sy.f.syncedAt.Load(), clock.UnixNano())
	}
	cur := sy.f.cur.Load()
	if cur != nil {
		st.mu.Lock()
		for _, r := range st.rows {
			if !r.late || clock.Sub(r.reservedAt) <= codefilter.SeqGapGrace {
				if !cur.Has(r.code) {
					t.Fatalf("link %s (number %d at %v, late %v) missing after the delta sync at %v",
						r.code, r.seq, r.reservedAt.Unix(), r.late, clock.Unix())
				}
			}
		}
		st.mu.Unlock()
	}
	if sy.build == nil && sy.rebuildDue() {
		sy.startBuild()
	}
	if sy.build != nil {
		_ = sy.buildPage(ctx)
	}
}
