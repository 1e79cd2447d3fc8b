package targeting

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxRawQuery bounds the visitor's query read: its first MaxRawQuery
// bytes, less a parameter the cut would split.
const MaxRawQuery = 4096

// queryIndex holds every query condition of a set as a slot, found by
// parameter name, so that one pass over a visitor's query decides them
// all.
type queryIndex struct {
	byName map[string][]uint16 // decoded name → slots
	slots  []querySlot
}

type querySlot struct {
	equals  string
	present bool // any value will do
}

// queryHits are the slots a visitor's query satisfies, one bit each.
type queryHits [queryBitsetWords]uint64

func (h *queryHits) has(slot int) bool { return h[slot/64]&(1<<(slot%64)) != 0 }

// query judges a rule's query conditions at path, adds them to idx and
// gives out their slots.
func (c *compiler) query(path string, in []QueryMatch, idx *queryIndex, out *cond) ([]QueryMatch, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > MaxQuery {
		return nil, fieldErr(path, "%d values given, at most %d are allowed", len(in), MaxQuery)
	}
	norm := make([]QueryMatch, len(in))
	for j, q := range in {
		qp := path + "[" + strconv.Itoa(j) + "]"
		if err := checkQueryMatch(qp, q); err != nil {
			return nil, err
		}
		norm[j] = QueryMatch{Name: q.Name, Present: q.Present}
		if q.Equals != nil {
			v := *q.Equals
			norm[j].Equals = &v
		}
		for _, earlier := range norm[:j] {
			if sameQueryMatch(earlier, norm[j]) {
				return nil, fieldErr(qp, "given twice")
			}
		}
	}
	out.queryFrom = len(idx.slots)
	for _, q := range norm {
		if idx.byName == nil {
			idx.byName = map[string][]uint16{}
		}
		idx.byName[q.Name] = append(idx.byName[q.Name], uint16(len(idx.slots)))
		slot := querySlot{present: q.Present}
		if q.Equals != nil {
			slot.equals = *q.Equals
		}
		idx.slots = append(idx.slots, slot)
	}
	out.queryTo = len(idx.slots)
	return norm, nil
}

// checkQueryMatch judges one query condition at path.
func checkQueryMatch(path string, q QueryMatch) error {
	if q.Name == "" || len(q.Name) > MaxQueryName {
		return fieldErr(path+".name", "must be 1 to %d bytes long", MaxQueryName)
	}
	if !utf8.ValidString(q.Name) {
		return fieldErr(path+".name", "not valid UTF-8")
	}
	switch {
	case q.Present && q.Equals != nil:
		return fieldErr(path+".present", "equals and present: true exclude each other")
	case !q.Present && q.Equals == nil:
		return fieldErr(path, "needs equals or present: true")
	case q.Equals != nil && len(*q.Equals) > MaxQueryEquals:
		return fieldErr(path+".equals", "%d bytes long, at most %d are allowed", len(*q.Equals), MaxQueryEquals)
	case q.Equals != nil && !utf8.ValidString(*q.Equals):
		return fieldErr(path+".equals", "not valid UTF-8")
	}
	return nil
}

func sameQueryMatch(a, b QueryMatch) bool {
	if a.Name != b.Name || a.Present != b.Present || (a.Equals == nil) != (b.Equals == nil) {
		return false
	}
	return a.Equals == nil || *a.Equals == *b.Equals
}

// scan reads a visitor's raw query once and marks in hits the slots it
// satisfies. Parameters are read as url.ParseQuery reads them: separated
// by '&', name and value percent-decoded with '+' as a space; one holding
// ';' or a malformed escape is skipped. It allocates nothing.
func (idx *queryIndex) scan(raw string, hits *queryHits) {
	raw = boundList(raw, MaxRawQuery, '&')
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" || strings.IndexByte(pair, ';') >= 0 {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		var name [MaxQueryName]byte
		n, valid, fits := unescapeQuery(name[:], k)
		if !valid || !fits {
			continue
		}
		slots, found := idx.byName[string(name[:n])]
		if !found {
			continue
		}
		var value [MaxQueryEquals]byte
		vn, valid, fits := unescapeQuery(value[:], v)
		if !valid {
			continue
		}
		for _, s := range slots {
			if q := idx.slots[s]; q.present || fits && string(value[:vn]) == q.equals {
				hits[s/64] |= 1 << (s % 64)
			}
		}
	}
}

// unescapeQuery decodes s, a query component, into dst: n bytes written,
// valid false on a malformed escape, fits false when the decoded form
// is longer than dst (the rest is still checked, not written).
func unescapeQuery(dst []byte, s string) (n int, valid, fits bool) {
	fits = true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '+':
			c = ' '
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return n, false, fits
			}
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
		}
		if n == len(dst) {
			fits = false
			continue
		}
		dst[n] = c
		n++
	}
	return n, true, fits
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
