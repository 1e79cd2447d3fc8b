package usagepool

import (
	"errors"
	"sync"
	"testing"
)

type thing struct{ closed int }

func newTestPool(closes *int) *Pool[*thing] {
	return New(func(t *thing) error { t.closed++; *closes++; return nil })
}

func TestSharedAndDestroyedByLastRelease(t *testing.T) {
	var closes, made int
	p := newTestPool(&closes)
	create := func() (*thing, error) { made++; return new(thing), nil }
	a, ha, err := p.LoadOrNew("k", create)
	if err != nil {
		t.Fatal(err)
	}
	b, hb, err := p.LoadOrNew("k", create)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || made != 1 {
		t.Fatalf("two uses of one key: same value = %v, created %d times, want true, 1", a == b, made)
	}
	if err := ha.Release(); err != nil || closes != 0 || p.Uses("k") != 1 {
		t.Fatalf("first release: err %v, closes %d, uses %d; want nil, 0, 1", err, closes, p.Uses("k"))
	}
	if err := hb.Release(); err != nil || closes != 1 || a.closed != 1 || p.Uses("k") != 0 {
		t.Fatalf("last release: err %v, closes %d, uses %d; want nil, 1, 0", err, closes, p.Uses("k"))
	}
	c, hc, _ := p.LoadOrNew("k", create)
	defer hc.Release()
	if c == a || made != 2 {
		t.Errorf("after the last release: a new value is made (made %d)", made)
	}
}

// A handle released twice gives back one use only: the other user's share
// stays, and the value stays open.
func TestDoubleRelease(t *testing.T) {
	var closes int
	p := newTestPool(&closes)
	create := func() (*thing, error) { return new(thing), nil }
	_, ha, _ := p.LoadOrNew("k", create)
	v, hb, _ := p.LoadOrNew("k", create)
	for range 3 {
		if err := ha.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if closes != 0 || v.closed != 0 || p.Uses("k") != 1 {
		t.Fatalf("one handle released three times: closes %d, uses %d; want 0, 1", closes, p.Uses("k"))
	}
	if err := hb.Release(); err != nil || closes != 1 {
		t.Fatalf("other handle released: err %v, closes %d; want nil, 1", err, closes)
	}
	if err := hb.Release(); err != nil || closes != 1 {
		t.Fatalf("released again after destroy: err %v, closes %d; want nil, 1", err, closes)
	}
	var nilHandle *Handle[*thing]
	if err := nilHandle.Release(); err != nil {
		t.Errorf("nil handle: %v", err)
	}
}

// Concurrent releases of one handle count once.
func TestConcurrentDoubleRelease(t *testing.T) {
	var closes int
	p := newTestPool(&closes)
	create := func() (*thing, error) { return new(thing), nil }
	_, keep, _ := p.LoadOrNew("k", create)
	_, h, _ := p.LoadOrNew("k", create)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _ = h.Release() })
	}
	wg.Wait()
	if p.Uses("k") != 1 {
		t.Fatalf("uses after concurrent releases of one handle = %d, want 1", p.Uses("k"))
	}
	_ = keep.Release()
	if closes != 1 {
		t.Errorf("closes = %d, want 1", closes)
	}
}

func TestCreateError(t *testing.T) {
	var closes int
	p := newTestPool(&closes)
	boom := errors.New("boom")
	v, h, err := p.LoadOrNew("k", func() (*thing, error) { return nil, boom })
	if !errors.Is(err, boom) || v != nil || h != nil || p.Uses("k") != 0 {
		t.Fatalf("failed create: %v %v %v uses %d; want boom and nothing kept", v, h, err, p.Uses("k"))
	}
	if err := h.Release(); err != nil {
		t.Errorf("releasing the nil handle of a failed create: %v", err)
	}
}

func TestDestroyError(t *testing.T) {
	boom := errors.New("close failed")
	p := New(func(*thing) error { return boom })
	_, h, _ := p.LoadOrNew("k", func() (*thing, error) { return new(thing), nil })
	if err := h.Release(); !errors.Is(err, boom) {
		t.Errorf("last release = %v, want destroy's error", err)
	}
}
