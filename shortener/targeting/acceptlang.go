package targeting

import "strings"

// Bounds of the Accept-Language read for a visitor: the first
// MaxAcceptLanguage bytes (less a range cut there) and the first
// MaxLanguageRanges ranges in them, malformed ones included.
const (
	MaxAcceptLanguage = 1024
	MaxLanguageRanges = 32
)

// langRange is one range of an Accept-Language: its bytes in the header
// and its q-value in thousandths.
type langRange struct {
	start, end, q uint16
}

// langRanges are a visitor's acceptable language ranges in preference
// order: q-value descending, equal q-values in header order. Ranges with
// q=0 (not acceptable), "*" (RFC 4647 lookup ignores it) and malformed
// ones are left out. It lives on the stack of one Decide.
type langRanges struct {
	hdr string
	r   [MaxLanguageRanges]langRange
	n   int
}

func (rs *langRanges) text(i int) string { return rs.hdr[rs.r[i].start:rs.r[i].end] }

// parse reads the header h (RFC 9110 §12.5.4): ranges separated by
// commas, each with an optional ";q=" weight and optional whitespace
// around the parts. A range with any other parameter, a malformed
// q-value or a malformed range is skipped.
func (rs *langRanges) parse(h string) {
	h = boundList(h, MaxAcceptLanguage, ',')
	rs.hdr, rs.n = h, 0
	for pos, seen := 0, 0; pos < len(h) && seen < MaxLanguageRanges; {
		end := strings.IndexByte(h[pos:], ',')
		if end < 0 {
			end = len(h)
		} else {
			end += pos
		}
		start := pos
		pos = end + 1
		for start < end && (h[start] == ' ' || h[start] == '\t') {
			start++
		}
		if start == end {
			continue // an empty element: allowed, not a range
		}
		seen++
		rangeLen, q, ok := parseLangElement(h[start:end])
		if ok && q > 0 {
			rs.insert(langRange{start: uint16(start), end: uint16(start + rangeLen), q: q})
		}
	}
}

// insert places r after every range of q-value r.q or higher.
func (rs *langRanges) insert(r langRange) {
	p := rs.n
	for p > 0 && rs.r[p-1].q < r.q {
		p--
	}
	copy(rs.r[p+1:rs.n+1], rs.r[p:rs.n])
	rs.r[p] = r
	rs.n++
}

// parseLangElement reads one element "range [OWS ';' OWS 'q=' qvalue]":
// the length of its range and its q-value (1000 when absent).
func parseLangElement(e string) (rangeLen int, q uint16, ok bool) {
	rng, params, hasParams := strings.Cut(e, ";")
	rng = strings.TrimRight(rng, " \t")
	if !validLangRange(rng) {
		return 0, 0, false
	}
	q = 1000
	if hasParams {
		p := strings.Trim(params, " \t")
		if len(p) < 2 || p[0]|0x20 != 'q' || p[1] != '=' {
			return 0, 0, false
		}
		if q, ok = parseQValue(p[2:]); !ok {
			return 0, 0, false
		}
	}
	return len(rng), q, true
}

// validLangRange: a basic language range (RFC 4647 §2.1) other than "*":
// subtags of 1 to 8 letters or digits joined by '-', the first letters.
func validLangRange(r string) bool {
	n, first := 0, true
	for i := 0; i <= len(r); i++ {
		if i < len(r) && r[i] != '-' {
			if !isAlnum(r[i]) || first && !isLetter(r[i]) {
				return false
			}
			n++
			continue
		}
		if n == 0 || n > 8 {
			return false
		}
		n, first = 0, false
	}
	return true
}

// parseQValue reads an RFC 9110 qvalue: "0" to "1" with at most three
// decimals, in thousandths.
func parseQValue(s string) (uint16, bool) {
	if s == "" || (s[0] != '0' && s[0] != '1') {
		return 0, false
	}
	whole := uint16(s[0]-'0') * 1000
	frac := s[1:]
	if frac == "" {
		return whole, true
	}
	if frac[0] != '.' || len(frac) > 4 {
		return 0, false
	}
	var v, scale uint16 = 0, 100
	for i := 1; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' || whole == 1000 && c != '0' {
			return 0, false
		}
		v += uint16(c-'0') * scale
		scale /= 10
	}
	return whole + v, true
}

// boundList cuts a list separated by sep to at most max bytes, leaving
// out an element the cut would split (so that no element is read
// shortened).
func boundList(s string, max int, sep byte) string {
	if len(s) <= max {
		return s
	}
	if s[max] == sep {
		return s[:max]
	}
	cut := s[:max]
	if i := strings.LastIndexByte(cut, sep); i >= 0 {
		return cut[:i]
	}
	return ""
}
