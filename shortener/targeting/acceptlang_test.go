package targeting

import (
	"slices"
	"strings"
	"testing"
)

// TestLanguageLookup: RFC 4647 §3.4 lookup of the rule's tags with the
// visitor's Accept-Language.
func TestLanguageLookup(t *testing.T) {
	for _, tc := range []struct {
		tags   []string
		header string
		want   bool
	}{
		{[]string{"en"}, "en", true},
		{[]string{"en"}, "EN-us", true},              // truncated to en, any case
		{[]string{"en-US"}, "en", false},             // lookup never extends a range
		{[]string{"zh-Hant"}, "zh-Hant-CN", true},    // zh-Hant-CN → zh-Hant
		{[]string{"zh"}, "zh-Hant-CN", true},         // → zh-Hant → zh
		{[]string{"zh-CN"}, "zh-Hant-CN", false},     // truncation drops from the end only
		{[]string{"de-CH"}, "de-CH-x-phonebk", true}, // the singleton x goes with phonebk
		{[]string{"de-CH-x"}, "de-CH-x-phonebk", false},
		{[]string{"de-CH-x-phonebk"}, "de-ch-X-PHONEBK", true},
		{[]string{"en"}, "*", false},          // * matches nothing
		{[]string{"en"}, "*, en;q=0.1", true}, // but the others are read
		{[]string{"fr"}, "en, fr;q=0", false}, // q=0: not acceptable
		{[]string{"fr"}, "en, fr;q=0.000", false},
		{[]string{"fr"}, "en, fr;q=0.001", true},
		{[]string{"fr"}, "en, fr ; q=0.5 ", true}, // whitespace around the parts
		{[]string{"fr"}, "en, fr;Q=1.000", true},
		{[]string{"fr"}, "fr;q=1.001", false}, // malformed q-values skip the range
		{[]string{"fr"}, "fr;q=2", false},
		{[]string{"fr"}, "fr;q=0.5000", false},
		{[]string{"fr"}, "fr;q=", false},
		{[]string{"fr"}, "fr;level=1", false}, // another parameter: malformed
		{[]string{"fr"}, "fr;q=0.5;q=0.7", false},
		{[]string{"fr"}, "123, fr-", false},     // malformed ranges
		{[]string{"fr"}, "f@r, fr", true},       // one malformed range, the next read
		{[]string{"fr"}, "fr-abcdefghi", false}, // a 9-character subtag
		{[]string{"fr"}, "fr-*", false},
		{[]string{"fr"}, ",, ,fr,", true}, // empty elements
		{[]string{"fr"}, "", false},
		{[]string{"i-klingon"}, "i-klingon", false}, // not a tag a rule may hold
	} {
		for i, tag := range tc.tags {
			tc.tags[i], _ = languageValue(tag)
		}
		if got := langMatches(tc.tags, tc.header); got != tc.want {
			t.Errorf("tags %v, Accept-Language %q: %v, want %v", tc.tags, tc.header, got, tc.want)
		}
	}
}

// TestLanguageRangesOrder: ranges in preference order: q descending,
// ties in header order.
func TestLanguageRangesOrder(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   []string
	}{
		{"da, en-gb;q=0.8, en;q=0.7", []string{"da", "en-gb", "en"}},
		{"en;q=0.5, fr, de;q=0.5, it;q=0.9, es", []string{"fr", "es", "it", "en", "de"}},
		{"a1;q=0.1, bb;q=0, cc;q=0.1, *;q=1, dd", []string{"dd", "cc"}},
	} {
		var rs langRanges
		rs.parse(tc.header)
		var got []string
		for i := 0; i < rs.n; i++ {
			got = append(got, rs.text(i))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("parse(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
}

// TestLanguageBounds: only the first 1024 bytes and 32 ranges are read,
// and a range cut at byte 1024 is left out.
func TestLanguageBounds(t *testing.T) {
	fr := []string{"fr"}
	filler := strings.Repeat("xx,", 31) // 31 ranges
	if !langMatches(fr, filler+"fr") {
		t.Error("the 32nd range is not read")
	}
	if langMatches(fr, filler+"@@,"+"fr") {
		t.Error("a 33rd range is read (malformed ranges count)")
	}
	pad := strings.Repeat(" ", 1021)
	if !langMatches(fr, pad+",fr") {
		t.Error("a range ending at byte 1024 is not read")
	}
	var rs langRanges
	rs.parse(pad + ",fra")
	if langMatches(fr, pad+",fra") || rs.n != 0 {
		t.Errorf("a range cut at byte 1024 is read (%d ranges)", rs.n)
	}
	rs.parse(strings.Repeat("en-", 2000) + "fr")
	if rs.n != 0 {
		t.Errorf("an over-long first range is read: %d ranges", rs.n)
	}
}

// langMatches decides a language condition of tags (normalised) for the
// header, as Decide does: one set's index, the visitor's mask, the
// condition's bits.
func langMatches(tags []string, header string) bool {
	var ix langIndex
	ls := ix.add(tags)
	var rs langRanges
	rs.parse(header)
	var m [langWords]uint64
	ix.mask(&rs, &m)
	return ls.hit(&m)
}

// lookupOracle is RFC 4647 §3.4 lookup written plainly, the oracle of
// FuzzLanguageMask: each range in preference order, then its truncations,
// compared without case with every tag.
func lookupOracle(tags []string, header string) bool {
	var rs langRanges
	rs.parse(header)
	for i := 0; i < rs.n; i++ {
		for r := rs.text(i); r != ""; r = truncateRange(r) {
			for _, t := range tags {
				if strings.EqualFold(t, r) {
					return true
				}
			}
		}
	}
	return false
}

// FuzzLanguageMask: over two conditions sharing one set's index, the bit
// test agrees with plain lookup for any header.
func FuzzLanguageMask(f *testing.F) {
	f.Add("de-CH,fr", "en-US, de-CH-x-phonebk;q=0.5, zh;q=0")
	f.Add("zh-Hant,en", "zh-Hant-CN-x-a, *")
	f.Fuzz(func(t *testing.T, tagList, header string) {
		var a, b []string
		for i, s := range strings.Split(tagList, ",") {
			v, msg := languageValue(s)
			if msg != "" || slices.Contains(a, v) || slices.Contains(b, v) {
				continue
			}
			if i%2 == 0 {
				a = append(a, v)
			} else {
				b = append(b, v)
			}
		}
		var ix langIndex
		la, lb := ix.add(a), ix.add(b)
		var rs langRanges
		rs.parse(header)
		var m [langWords]uint64
		ix.mask(&rs, &m)
		if la.hit(&m) != lookupOracle(a, header) || lb.hit(&m) != lookupOracle(b, header) {
			t.Fatalf("tags %q / %q, header %q: mask %v %v, lookup %v %v",
				a, b, header, la.hit(&m), lb.hit(&m), lookupOracle(a, header), lookupOracle(b, header))
		}
	})
}
