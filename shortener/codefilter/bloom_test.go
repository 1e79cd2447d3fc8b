package codefilter

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// testCodes returns n distinct random codes of length 7 (the default).
func testCodes(t testing.TB, n int) []string {
	t.Helper()
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		c, err := link.RandomCode(7)
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

// At capacity the measured false-positive rate is near the design (0.07%)
// and the estimate from the bits set agrees; nothing added is ever missed.
func TestBloomRates(t *testing.T) {
	const n, probes = 200_000, 200_000
	codes := testCodes(t, n+probes)
	b := NewBloom(n)
	for _, c := range codes[:n] {
		b.Add(c)
	}
	for _, c := range codes[:n] {
		if !b.Has(c) {
			t.Fatalf("has(%q) = false after add", c)
		}
	}
	fp := 0
	for _, c := range codes[n:] {
		if b.Has(c) {
			fp++
		}
	}
	design := math.Pow(1-math.Exp(-float64(bloomProbes)/BloomBitsPerCode), bloomProbes)
	got := float64(fp) / probes
	if got > 2*design {
		t.Errorf("false-positive rate %.4f%% at capacity, want about %.4f%%", 100*got, 100*design)
	}
	if est := b.FPRate(); est < design/2 || est > 2*design {
		t.Errorf("fpRate() = %.4f%%, want about %.4f%%", 100*est, 100*design)
	}
	if want := int64(n * BloomBitsPerCode / 8); b.Bytes() < want || b.Bytes() > want+8 {
		t.Errorf("bytes() = %d, want %d", b.Bytes(), want)
	}
	t.Logf("%d codes: %d bytes, false positives %.4f%% (design %.4f%%, estimate %.4f%%)",
		n, b.Bytes(), 100*got, 100*design, 100*b.FPRate())
}

// Sizes stay within bounds, and an empty filter holds nothing.
func TestBloomSizes(t *testing.T) {
	for _, capacity := range []int{-1, 0, 1, 63, 64, 1000} {
		b := NewBloom(capacity)
		if b.m == 0 || b.m%64 != 0 || uint64(len(b.words))*64 != b.m {
			t.Errorf("NewBloom(%d): %d bits in %d words", capacity, b.m, len(b.words))
		}
		if b.Has("abc1234") || b.FPRate() != 0 {
			t.Errorf("NewBloom(%d) is not empty", capacity)
		}
	}
}

// Two filters hash under different seeds: the codes one lets through are
// not the other's.
func TestBloomSeeded(t *testing.T) {
	const n = 2000
	codes := testCodes(t, n+50_000)
	a, b := NewBloom(n/3), NewBloom(n/3) // overfull: about 20% false positives
	for _, c := range codes[:n] {
		a.Add(c)
		b.Add(c)
	}
	both, onlyOne := 0, 0
	for _, c := range codes[n:] {
		switch x, y := a.Has(c), b.Has(c); {
		case x && y:
			both++
		case x != y:
			onlyOne++
		}
	}
	if onlyOne == 0 || both > onlyOne {
		t.Errorf("false positives shared by both filters %d, of one only %d: seeds do not differ", both, onlyOne)
	}
}

// Concurrent adds and tests (run with -race): an added code is seen by
// every test that starts after its add returned.
func TestBloomConcurrent(t *testing.T) {
	codes := testCodes(t, 20_000)
	b := NewBloom(len(codes))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(codes); i += 4 {
				b.Add(codes[i])
				if !b.Has(codes[i]) {
					t.Errorf("has(%q) = false right after add", codes[i])
					return
				}
			}
		})
	}
	wg.Go(func() {
		for _, c := range codes {
			b.Has(c)
		}
	})
	wg.Wait()
	for _, c := range codes {
		if !b.Has(c) {
			t.Fatalf("has(%q) = false", c)
		}
	}
}

func BenchmarkBloomHas(b *testing.B) {
	const n = 1_000_000
	codes := testCodes(b, n+10_000)
	f := NewBloom(n)
	for _, c := range codes[:n] {
		f.Add(c)
	}
	for _, bc := range []struct {
		name  string
		codes []string
	}{{"absent", codes[n:]}, {"present", codes[:10_000]}} {
		b.Run(fmt.Sprint(bc.name), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f.Has(bc.codes[i%len(bc.codes)])
				i++
			}
		})
	}
}
