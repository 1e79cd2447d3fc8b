package targeting

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// splitSet is a set whose link-level variants have the weights given,
// named v0, v1, ...
func splitSet(t *testing.T, weights ...int) *Set {
	t.Helper()
	var vs []string
	for i, w := range weights {
		vs = append(vs, `{"name":"v`+strconv.Itoa(i)+`","url":"https://v`+strconv.Itoa(i)+`.example/","weight":`+strconv.Itoa(w)+`}`)
	}
	return mustParse(t, `{"variants":[`+strings.Join(vs, ",")+`]}`)
}

// TestSplitShares: 10,000 visitors with random keys land on each variant
// within 2 percentage points of its weight, and each sees one variant on
// every repeat.
func TestSplitShares(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, weights := range [][]int{{30, 70}, {20, 30, 50}} {
		s := splitSet(t, weights...)
		for _, link := range []string{"abc", "Promo-2026"} {
			const visitors = 10000
			counts := make([]int, len(weights))
			for range visitors {
				v := Visitor{Key: rng.Uint64(), Link: link}
				first := s.Decide(&v)
				for range 4 {
					if d := s.Decide(&v); d != first {
						t.Fatalf("key %d on %s: %+v, then %+v", v.Key, link, first, d)
					}
				}
				counts[first.Variant]++
			}
			for i, w := range weights {
				share := 100 * float64(counts[i]) / visitors
				if math.Abs(share-float64(w)) > 2 {
					t.Errorf("weights %v, link %s: variant %d got %.2f%%, want %d%% ± 2", weights, link, i, share, w)
				}
			}
		}
	}
}

// TestRuleSplit: a rule's variants pick by the rule's own bucket, and the
// decision names rule and variant.
func TestRuleSplit(t *testing.T) {
	s := mustParse(t, `{"rules":[{"name":"ab","variants":[
		{"name":"a","url":"https://a.example/","weight":50},{"name":"b","url":"https://b.example/","weight":50}]}]}`)
	seen := map[string]bool{}
	for key := range uint64(64) {
		d := s.Decide(&Visitor{Key: key, Link: "x"})
		want := int(bucket(key, "x", 0) / 50)
		if d.Rule != 0 || d.RuleName != "ab" || d.Variant != want || d.VariantName != s.src[0].Variants[want].Name ||
			d.URL != s.src[0].Variants[want].URL || d.AppURL != "" {
			t.Fatalf("key %d: %+v, want variant %d of rule 0", key, d, want)
		}
		seen[d.VariantName] = true
	}
	if len(seen) != 2 {
		t.Errorf("64 keys saw variants %v", seen)
	}
}

// TestBucketStable: the bucket of a visitor is a fixed function of key,
// code and rule (split.go), the same in every process and release:
// changing it would move visitors between variants. The values were
// checked against a separate implementation (Python) of the same steps.
func TestBucketStable(t *testing.T) {
	for _, tc := range []struct {
		key  uint64
		link string
		rule int
		want uint64
	}{
		{0, "", -1, 3},
		{1, "abc", -1, 5},
		{1, "abc", 0, 36},
		{0xdeadbeefcafef00d, "promo2026", 3, 18},
		{42, "x", 49, 85},
	} {
		if got := bucket(tc.key, tc.link, tc.rule); got != tc.want {
			t.Errorf("bucket(%d, %q, %d) = %d, want %d", tc.key, tc.link, tc.rule, got, tc.want)
		}
	}
}

// TestPickEdges: variant j owns the buckets up to its cumulative weight.
func TestPickEdges(t *testing.T) {
	sp := split{ends: []uint8{1, 30, 100}}
	for b, want := range map[uint64]int{0: 0, 1: 1, 29: 1, 30: 2, 99: 2} {
		if got := sp.pick(b); got != want {
			t.Errorf("pick(%d) = %d, want %d", b, got, want)
		}
	}
}
