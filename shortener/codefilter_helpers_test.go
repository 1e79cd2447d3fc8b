package shortener

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// listingStore is a countingStore that also lists codes (so the handler
// builds a code filter from it), counting listing queries. hold makes
// listing calls wait (until released or their context ends), failing makes
// them fail.
type listingStore struct {
	countingStore
	lister  link.CodeLister
	scans   atomic.Int64
	deltas  atomic.Int64
	held    atomic.Int64 // listing calls waiting now
	hold    atomic.Pointer[chan struct{}]
	failing atomic.Bool
}

func newListingStore(t testing.TB, s link.Store) *listingStore {
	t.Helper()
	l, ok := s.(link.CodeLister)
	if !ok {
		t.Fatalf("%T lists no codes", s)
	}
	return &listingStore{countingStore: countingStore{Store: s}, lister: l}
}

// holdListing makes listing calls wait from now on; the returned func
// releases them (and is also run at test end).
func (s *listingStore) holdListing(t testing.TB) func() {
	ch := make(chan struct{})
	s.hold.Store(&ch)
	var done atomic.Bool
	release := func() {
		if done.CompareAndSwap(false, true) {
			s.hold.Store(nil)
			close(ch)
		}
	}
	t.Cleanup(release)
	return release
}

func (s *listingStore) gate(ctx context.Context) error {
	if ch := s.hold.Load(); ch != nil {
		s.held.Add(1)
		defer s.held.Add(-1)
		select {
		case <-*ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.failing.Load() {
		return errDown
	}
	return nil
}

func (s *listingStore) ScanCodes(ctx context.Context, after string, limit int) ([]string, error) {
	s.scans.Add(1)
	if err := s.gate(ctx); err != nil {
		return nil, err
	}
	return s.lister.ScanCodes(ctx, after, limit)
}

func (s *listingStore) CodesSince(ctx context.Context, after int64, limit int) ([]link.SeqCode, error) {
	s.deltas.Add(1)
	if err := s.gate(ctx); err != nil {
		return nil, err
	}
	return s.lister.CodesSince(ctx, after, limit)
}

func (s *listingStore) LastSeq(ctx context.Context) (int64, error) {
	if err := s.gate(ctx); err != nil {
		return 0, err
	}
	return s.lister.LastSeq(ctx)
}

// filterServing reports whether h's code filter is built and current.
func filterServing(h *Handler) bool {
	f := h.cache.codes
	return f != nil && f.cur.Load() != nil && f.now().UnixNano()-f.syncedAt.Load() <= f.staleAfter
}

// waitFilterReady waits until h's code filter answers unknown codes.
func waitFilterReady(t testing.TB, h *Handler) {
	t.Helper()
	eventually(t, 30*time.Second, "the code filter is built", func() bool { return filterServing(h) })
}

// waitFilterKnows waits until h's code filter is current and holds code: a
// link inserted behind the handler's back is then looked up like any.
func waitFilterKnows(t testing.TB, h *Handler, code string) {
	t.Helper()
	eventually(t, 30*time.Second, "the code filter learns "+code, func() bool {
		return filterServing(h) && h.cache.codes.cur.Load().Has(code)
	})
}

// redisKeys counts the keys under prefix.
func redisKeys(t testing.TB, rdb *redis.Client, prefix string) int {
	t.Helper()
	n := 0
	iter := rdb.Scan(context.Background(), 0, prefix+":*", 1000).Iterator()
	for iter.Next(context.Background()) {
		n++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func gaugeValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		return -1
	}
	return m.GetGauge().GetValue()
}

// testCodes returns n distinct random codes of the default length.
func testCodes(t testing.TB, n int) []string {
	t.Helper()
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		c, err := link.RandomCode(DefaultCodeLength)
		if err != nil {
			t.Fatal(err)
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}
