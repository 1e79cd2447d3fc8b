package codefilter

import (
	"hash/maphash"
	"math"
	"math/bits"
	"sync/atomic"
)

// Bloom filter parameters: 15 bits and 10 probes per code. At capacity a
// code never added tests positive with probability (1-e^(-10/15))^10 ≈
// 0.07%; the handler rebuilds a filter larger before it passes its
// false-positive bound.
const (
	BloomBitsPerCode = 15
	bloomProbes      = 10
	BloomMaxCapacity = 1 << 31 // 4 GiB of bits; far beyond any real store
)

// Bloom is a Bloom filter of codes. Adds and tests are lock-free (atomic
// words), so a lookup never waits for the sync that fills the filter, and
// a test never misses a code whose add has returned.
//
// Codes are hashed with hash/maphash under a seed drawn per filter: which
// codes share bits (the false positives) cannot be worked out outside the
// process, so a scanner cannot pick codes that pass.
type Bloom struct {
	words    []atomic.Uint64
	m        uint64 // bits
	capacity int    // codes it was sized for
	seed     maphash.Seed
	set      atomic.Uint64 // bits set, for fpRate
}

// NewBloom returns an empty filter sized for capacity codes.
func NewBloom(capacity int) *Bloom {
	capacity = min(max(capacity, 1), BloomMaxCapacity)
	m := (uint64(capacity)*BloomBitsPerCode + 63) &^ 63
	return &Bloom{words: make([]atomic.Uint64, m/64), m: m, capacity: capacity, seed: maphash.MakeSeed()}
}

// probe returns the first hash of code and the stride between its probes
// (double hashing: probe i is h1 + i*h2, reduced to [0, m) by a
// multiply-high, which needs no division).
func (b *Bloom) probe(code string) (h1, h2 uint64) {
	h := maphash.String(b.seed, code)
	return h, mix64(h) | 1
}

// Add records code.
func (b *Bloom) Add(code string) {
	h, d := b.probe(code)
	for range bloomProbes {
		i, _ := bits.Mul64(h, b.m)
		w, mask := &b.words[i/64], uint64(1)<<(i%64)
		// Load first: a bit already set costs no write to a shared
		// cache line.
		if w.Load()&mask == 0 && w.Or(mask)&mask == 0 {
			b.set.Add(1)
		}
		h += d
	}
}

// Has reports whether code may have been added: always true for a code
// that was.
func (b *Bloom) Has(code string) bool {
	h, d := b.probe(code)
	for range bloomProbes {
		i, _ := bits.Mul64(h, b.m)
		if b.words[i/64].Load()&(uint64(1)<<(i%64)) == 0 {
			return false
		}
		h += d
	}
	return true
}

// FPRate estimates the probability that a code never added tests
// positive, from the share of bits set.
func (b *Bloom) FPRate() float64 {
	return math.Pow(float64(b.set.Load())/float64(b.m), bloomProbes)
}

// Bytes is the memory of the bit array.
func (b *Bloom) Bytes() int64 { return int64(b.m / 8) }

// mix64 is SplitMix64's finalizer: a bijection that spreads every input
// bit over the output, so the stride looks independent of h1.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
