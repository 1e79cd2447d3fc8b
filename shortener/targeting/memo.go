package targeting

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// Memo remembers which rule recent visitors got from rule sets whose
// conditions read only the user agent (device, os, browser), the country
// and the language: for those, the rule is a function of five short
// strings, and most visits repeat a few combinations. A redirect then
// compares five strings instead of evaluating every rule. Variants are
// still picked per visitor. A Memo is shared by every set of a handler:
// a fixed table (MemoSlots entries, each at most MemoMaxLanguage bytes of
// Accept-Language), so its memory is bounded whatever the traffic. Safe
// for concurrent use; the zero value is not (NewMemo).
type Memo struct {
	seed  maphash.Seed
	slots [MemoSlots]atomic.Pointer[memoEntry]
}

// The Memo's bounds: its entries, and the longest Accept-Language it
// keeps (a visit with a longer one is decided without it).
const (
	MemoSlots       = 4096
	MemoMaxLanguage = 128
)

// memoEntry is one remembered decision: the set (by id), the visitor's
// values it read, and the rule it chose (-1: none).
type memoEntry struct {
	set                          uint64
	device, os, browser, country string
	language                     string
	rule                         int
}

// setIDs numbers every Set made, so that a Memo entry never answers for
// another set (a pointer could be reused once a set is freed).
var setIDs atomic.Uint64

func NewMemo() *Memo { return &Memo{seed: maphash.MakeSeed()} }

// memoable: every condition of the set's rules reads only the user
// agent, the country and the language.
func (s *Set) memoable() bool {
	for i := range s.rules {
		if s.rules[i].cond.needs&^(NeedUA|NeedCountry|NeedLanguage) != 0 {
			return false
		}
	}
	return true
}

// DecideWith is Decide with m remembering the rule chosen for sets that
// only read the user agent, the country and the language (and visits
// with an Accept-Language of at most MemoMaxLanguage bytes); it decides
// exactly as Decide does. A nil m is no Memo.
func (s *Set) DecideWith(m *Memo, v *Visitor) Decision {
	if m == nil || s == nil || v == nil || !s.memo || len(v.AcceptLanguage) > MemoMaxLanguage {
		return s.Decide(v)
	}
	slot := &m.slots[m.hash(s.id, v)%MemoSlots]
	if e := slot.Load(); e != nil && e.set == s.id && e.device == v.Device && e.os == v.OS &&
		e.browser == v.Browser && e.country == v.Country && e.language == v.AcceptLanguage {
		return s.decision(e.rule, v)
	}
	i := s.firstRule(v)
	slot.Store(&memoEntry{set: s.id, device: v.Device, os: v.OS, browser: v.Browser, country: v.Country,
		language: strings.Clone(v.AcceptLanguage), rule: i}) // not the request's header memory
	return s.decision(i, v)
}

// hash mixes the set's id and the five values the entry is found by:
// maphash of the Accept-Language, FNV-1a of the four short ones.
func (m *Memo) hash(set uint64, v *Visitor) uint64 {
	h := uint64(14695981039346656037) // FNV-1a offset basis
	for _, s := range [...]string{v.Device, v.OS, v.Browser, v.Country} {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
		h = (h ^ 0xff) * 1099511628211 // a separator: "ab","c" is not "a","bc"
	}
	return h ^ maphash.String(m.seed, v.AcceptLanguage) ^ set*0x9e3779b97f4a7c15
}
