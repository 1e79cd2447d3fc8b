package targeting

import "strconv"

// split is a compiled variant list: variant j owns the buckets
// [ends[j-1], ends[j]) of 0..99.
type split struct {
	variants []Variant
	ends     []uint8
}

func (sp split) n() int { return len(sp.variants) }

// split judges a variant list (a rule's or the link's) at path.
func (c *compiler) split(path string, in []Variant) (split, []Variant, error) {
	if len(in) < MinVariants || len(in) > MaxVariants {
		return split{}, nil, fieldErr(path, "%d variants given, %d to %d are needed", len(in), MinVariants, MaxVariants)
	}
	sp := split{variants: cloneSlice(in), ends: make([]uint8, len(in))}
	total := 0
	for j, v := range in {
		vp := path + "[" + strconv.Itoa(j) + "]"
		if !validVariantName(v.Name) {
			return split{}, nil, fieldErr(vp+".name", "must be 1 to %d of A-Z a-z 0-9 _ -", MaxVariantName)
		}
		for _, earlier := range in[:j] {
			if earlier.Name == v.Name {
				return split{}, nil, fieldErr(vp+".name", "%q is the name of an earlier variant", v.Name)
			}
		}
		if err := c.checkURL(vp+".url", v.URL); err != nil {
			return split{}, nil, err
		}
		if v.Weight < MinWeight || v.Weight > MaxWeight {
			return split{}, nil, fieldErr(vp+".weight", "must be %d to %d, not %d", MinWeight, MaxWeight, v.Weight)
		}
		total += v.Weight
		sp.ends[j] = uint8(total)
	}
	if total != weightTotal {
		return split{}, nil, fieldErr(path, "the weights sum to %d, they must sum to %d", total, weightTotal)
	}
	return sp, cloneSlice(in), nil
}

func validVariantName(s string) bool {
	if s == "" || len(s) > MaxVariantName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// pick returns the index of the variant owning bucket b (0..99).
func (sp split) pick(b uint64) int {
	for j, end := range sp.ends {
		if b < uint64(end) {
			return j
		}
	}
	return len(sp.ends) - 1 // unreachable: the last end is 100
}

// bucket hashes a visitor into 0..99 for the variant list of rule (-1:
// the link-level list) of the link with code link: FNV-1a (64-bit) of the
// code, XOR the key, XOR (rule+1) times the 64-bit golden ratio, through
// splitmix64's finaliser, modulo 100. It depends on nothing else, so
// every process and machine assigns a visitor the same variant.
func bucket(key uint64, link string, rule int) uint64 {
	h := uint64(14695981039346656037) // FNV-1a offset basis
	for i := 0; i < len(link); i++ {
		h ^= uint64(link[i])
		h *= 1099511628211 // FNV-1a prime
	}
	x := h ^ key ^ uint64(int64(rule)+1)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x % weightTotal
}
