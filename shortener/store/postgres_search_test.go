package store

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzLooseLike: the loosened pattern holds only letters, digits, other
// UTF-8 bytes and %, it is used only when a run of three letters or digits
// gives the index trigrams to work with, and any text that contains the
// search (case aside) matches it: its runs appear in that text in order.
func FuzzLooseLike(f *testing.F) {
	for _, s := range []string{"sale-12345", "a_b", "50%", `x\y`, "über", "-1https", "EXAMPLE.ORG", "ab-cd-ef", "%%%", "a1b"} {
		f.Add(s, "https://example.com/", "?x=1")
	}
	f.Fuzz(func(t *testing.T, s, prefix, suffix string) {
		pattern, ok := looseLike(s)
		if strings.ContainsAny(pattern, `_\`) || !strings.HasPrefix(pattern, "%") || !strings.HasSuffix(pattern, "%") {
			t.Fatalf("looseLike(%q) = %q: wildcards other than %%, or unanchored", s, pattern)
		}
		longRun := false
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r < 0x80 && !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			longRun = longRun || len(w) >= 3
		}
		if ok != longRun {
			t.Fatalf("looseLike(%q) ok = %v, want %v", s, ok, longRun)
		}
		text := strings.ToLower(prefix + strings.ToUpper(s) + suffix)
		at := 0
		for _, run := range strings.Split(strings.Trim(pattern, "%"), "%") {
			i := strings.Index(text[at:], strings.ToLower(run))
			if i < 0 {
				t.Fatalf("looseLike(%q) = %q: run %q not found in order in %q", s, pattern, run, text)
			}
			at += i + len(run)
		}
	})
}
