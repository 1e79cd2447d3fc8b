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

// langSet is a language condition compiled: its tags and the longest.
type langSet struct {
	tags   []string
	maxLen int
}

func newLangSet(tags []string) langSet {
	ls := langSet{tags: tags}
	for _, t := range tags {
		ls.maxLen = max(ls.maxLen, len(t))
	}
	return ls
}

// matches applies RFC 4647 §3.4 lookup to the visitor's ranges, in
// preference order: a range, then each truncation of it (its last subtag
// dropped, and a singleton left at the end dropped with it), is compared
// without case with every tag; the condition holds at the first equal.
// ("zh-Hant-CN-x-a" tries "zh-Hant-CN-x-a", "zh-Hant-CN", "zh-Hant", "zh".)
func (ls *langSet) matches(rs *langRanges) bool {
	for i := 0; i < rs.n; i++ {
		r := rs.text(i)
		for r != "" {
			if len(r) <= ls.maxLen && ls.has(r) {
				return true
			}
			r = truncateRange(r)
		}
	}
	return false
}

func (ls *langSet) has(r string) bool {
	for _, t := range ls.tags {
		if len(t) == len(r) && strings.EqualFold(t, r) {
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
