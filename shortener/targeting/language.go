package targeting

import (
	"fmt"
	"strings"
)

// languageValue accepts a BCP 47 language tag, checked for syntax only:
// subtags of 1 to 8 letters or digits joined by '-', the first of 2 or 3
// letters, at most MaxLanguageTag bytes. It is shown in the usual case:
// the language lower-case, a 2-letter region upper-case, a 4-letter
// script title-case, the rest (and all after a singleton such as "x" or
// "u") lower-case: "fr-CA", "zh-Hant-TW", "de-CH-x-phonebk".
func languageValue(s string) (string, string) {
	if s == "" || len(s) > MaxLanguageTag {
		return "", fmt.Sprintf("must be a language tag of 2 to %d characters", MaxLanguageTag)
	}
	subs := strings.Split(s, "-")
	afterSingleton := false
	for i, sub := range subs {
		if !validSubtag(sub, i == 0) {
			return "", "must be a language tag such as en, fr-CA or zh-Hant-TW"
		}
		b := []byte(sub)
		for j := range b {
			b[j] = lower(b[j])
		}
		switch {
		case i == 0 || afterSingleton:
		case len(b) == 1:
			afterSingleton = true
		case len(b) == 2 && allLetters(sub):
			b[0], b[1] = upper(b[0]), upper(b[1])
		case len(b) == 4 && allLetters(sub):
			b[0] = upper(b[0])
		}
		subs[i] = string(b)
	}
	return strings.Join(subs, "-"), ""
}

// validSubtag: 1 to 8 ASCII letters or digits; the first subtag 2 or 3
// letters.
func validSubtag(sub string, first bool) bool {
	if len(sub) == 0 || len(sub) > 8 || first && (len(sub) < 2 || len(sub) > 3 || !allLetters(sub)) {
		return false
	}
	for i := 0; i < len(sub); i++ {
		if !isAlnum(sub[i]) {
			return false
		}
	}
	return true
}

func allLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLetter(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c - 'A' + 'a'
	}
	return c
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// langSet is a language condition compiled: its tags (for the reference
// lookup in tests) and their ids in the set's langIndex.
type langSet struct {
	tags []string
	ids  []uint16
}

// langIndex numbers the distinct language tags of a set's rules (their
// lower-case form), so that a visitor's Accept-Language is read once per
// decision into a bit set of the tags it matches (langIndex.mask) and
// each language condition is a test of its tags' bits.
type langIndex struct {
	ids    map[string]uint16
	maxLen int
}

// langWords is how many words a decision's bit set of tags takes: every
// tag of every rule distinct.
const langWords = (MaxRules*MaxLanguages + 63) / 64

// add compiles the normalised tags of one condition.
func (ix *langIndex) add(tags []string) langSet {
	ls := langSet{tags: tags}
	if len(tags) == 0 {
		return ls
	}
	if ix.ids == nil {
		ix.ids = make(map[string]uint16)
	}
	for _, t := range tags {
		k := strings.ToLower(t)
		id, ok := ix.ids[k]
		if !ok {
			id = uint16(len(ix.ids))
			ix.ids[k] = id
			ix.maxLen = max(ix.maxLen, len(k))
		}
		ls.ids = append(ls.ids, id)
	}
	return ls
}

// mask sets in m the bit of every tag RFC 4647 §3.4 lookup finds for one
// of the visitor's ranges: the range, then each truncation of it (its
// last subtag dropped, and a singleton left at the end dropped with it),
// compared without case. ("zh-Hant-CN-x-a" tries "zh-Hant-CN-x-a",
// "zh-Hant-CN", "zh-Hant", "zh".) A condition holds when lookup finds one
// of its tags for some range, which is when one of its bits is set.
func (ix *langIndex) mask(rs *langRanges, m *[langWords]uint64) {
	var buf [MaxLanguageTag]byte
	for i := 0; i < rs.n; i++ {
		r := rs.text(i)
		for r != "" {
			if len(r) <= ix.maxLen {
				for j := 0; j < len(r); j++ {
					buf[j] = lower(r[j])
				}
				if id, ok := ix.ids[string(buf[:len(r)])]; ok {
					m[id/64] |= 1 << (id % 64)
				}
			}
			r = truncateRange(r)
		}
	}
}

// hit reports whether one of the condition's tags has its bit set in m.
func (ls *langSet) hit(m *[langWords]uint64) bool {
	for _, id := range ls.ids {
		if m[id/64]&(1<<(id%64)) != 0 {
			return true
		}
	}
	return false
}

// truncateRange drops r's last subtag, and then a singleton left last;
// "" when r has one subtag.
func truncateRange(r string) string {
	i := strings.LastIndexByte(r, '-')
	if i < 0 {
		return ""
	}
	r = r[:i]
	if n := len(r); n >= 2 && r[n-2] == '-' {
		r = r[:n-2]
	}
	return r
}
