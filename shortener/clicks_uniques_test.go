package shortener

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// Ten thousand distinct visitors, in batches merged into the stored
// sketch as the sinks do, then merged across days: within 2%, for
// several deterministic seeds; a visitor seen again is not counted twice.
func TestVisitorSketchAccuracy(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		salt := make([]byte, 32)
		binary.BigEndian.PutUint64(salt, rng.Uint64())
		var stored []byte
		var hashes []uint64
		for i := range 10000 {
			hashes = append(hashes, visitorHash(salt, "198.51.100."+itoa(int64(i%256))+"/"+itoa(int64(i)), "UA"))
			if len(hashes) == 500 {
				var err error
				if stored, err = addVisitors(stored, append(hashes, hashes[:100]...)); err != nil { // 100 repeat visitors
					t.Fatal(err)
				}
				hashes = hashes[:0]
			}
		}
		got := mergeVisitors([][]byte{stored, stored}) // merge is idempotent
		if dev := math.Abs(float64(got)-10000) / 10000; dev > 0.02 {
			t.Errorf("seed %d: %d distinct visitors estimated as %d (%.2f%%), want within 2%%", seed, 10000, got, 100*dev)
		}
	}
	v := func(a string) uint64 { return visitorHash([]byte("salt"), a, "UA") }
	small, _ := addVisitors(nil, []uint64{v("a"), v("b"), v("c"), v("c"), v("b")})
	if got := mergeVisitors([][]byte{small}); got != 3 {
		t.Errorf("3 visitors while sparse = %d, want exactly 3", got)
	}
}

// Any stored bytes decode or fail, never panic; a sketch that decodes
// re-encodes to one with the same estimate; merging is commutative and
// idempotent, and a merge estimates within the bound of its exact union.
func FuzzVisitorSketch(f *testing.F) {
	seed, _ := addVisitors(nil, []uint64{1, 2, 3})
	f.Add(seed, []byte("abcdefgh12345678"))
	f.Add([]byte{2, 14, 0, 0, 0, 0, 0, 0}, []byte{})
	f.Add([]byte{1, 14, 0, 1, 255, 255, 255, 255}, []byte("x"))
	f.Fuzz(func(t *testing.T, stored, more []byte) {
		if sk, err := decodeVisitorSketch(stored); err == nil {
			b, err := sk.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			again, err := decodeVisitorSketch(b)
			if err != nil || again.Estimate() != sk.Estimate() {
				t.Fatalf("round trip: %v, estimate %d then %d", err, sk.Estimate(), again.Estimate())
			}
		}
		var ha, hb []uint64
		exact := map[uint64]bool{}
		for i := 0; i+8 <= len(more); i += 8 {
			h := binary.LittleEndian.Uint64(more[i:]) * 0x9E3779B97F4A7C15
			if i%16 == 0 {
				ha = append(ha, h)
			} else {
				hb = append(hb, h)
			}
			exact[h] = true
		}
		a, _ := addVisitors(stored, ha) // a bad stored value restarts
		b, _ := addVisitors(nil, hb)
		ab, ba := mergeVisitors([][]byte{a, b}), mergeVisitors([][]byte{b, a})
		if ab != ba || mergeVisitors([][]byte{a, a}) != mergeVisitors([][]byte{a}) {
			t.Fatalf("merge: a∪b %d, b∪a %d; a∪a %d, a %d", ab, ba, mergeVisitors([][]byte{a, a}), mergeVisitors([][]byte{a}))
		}
		if _, err := decodeVisitorSketch(stored); err != nil && len(exact) <= 100 {
			if d := math.Abs(float64(ab) - float64(len(exact))); d > 1+0.05*float64(len(exact)) {
				t.Fatalf("%d distinct hashes estimated %d", len(exact), ab)
			}
		}
	})
}
