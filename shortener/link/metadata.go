package link

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds of a link's metadata, counted in characters (Unicode code points).
const (
	MaxTitle  = 200
	MaxTags   = 20
	MaxTagLen = 50
	MaxNotes  = 2000
)

// CheckMetadata judges a link's title, tags and notes; the error names the
// field. The API and both stores apply it.
//
//   - title: at most 200 characters, no control characters (line breaks
//     included) and no bidi controls.
//   - tags: at most 20, each 1 to 50 of A-Z a-z 0-9 _ . : -, compared as
//     written (case-sensitive); a tag given twice is refused.
//   - notes: at most 2,000 characters; tabs and line breaks (\n, \r) are
//     allowed, other control characters and bidi controls are not.
func CheckMetadata(title string, tags []string, notes string) error {
	if err := CheckText("title", title, MaxTitle, false); err != nil {
		return err
	}
	if len(tags) > MaxTags {
		return fmt.Errorf("tags: %d given, at most %d are allowed", len(tags), MaxTags)
	}
	seen := make(map[string]struct{}, len(tags))
	for i, tag := range tags {
		for j := 0; j < len(tag); j++ {
			if !isTagByte(tag[j]) {
				return fmt.Errorf("tags[%d]: only A-Z a-z 0-9 _ . : - are allowed in a tag", i)
			}
		}
		if tag == "" || len(tag) > MaxTagLen {
			return fmt.Errorf("tags[%d]: a tag is 1 to %d characters long", i, MaxTagLen)
		}
		if _, dup := seen[tag]; dup {
			return fmt.Errorf("tags[%d]: '%s' given twice", i, tag)
		}
		seen[tag] = struct{}{}
	}
	return CheckText("notes", notes, MaxNotes, true)
}

func isTagByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == ':' || c == '-'
}

// CheckText bounds a free-text field and refuses invalid UTF-8, control
// characters (but tabs and line breaks where lines are allowed), the line
// and paragraph separators U+2028/U+2029 in a one-line field, and the bidi
// controls that can make text display other than it reads.
func CheckText(field, s string, maxChars int, lines bool) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", field)
	}
	if n := utf8.RuneCountInString(s); n > maxChars {
		return fmt.Errorf("%s is %d characters long, at most %d are allowed", field, n, maxChars)
	}
	for _, r := range s {
		switch {
		case lines && (r == '\n' || r == '\r' || r == '\t'):
		case unicode.IsControl(r), !lines && (r == '\u2028' || r == '\u2029'):
			return fmt.Errorf("%s contains the control character %U", field, r)
		case isBidiControl(r):
			return fmt.Errorf("%s contains the bidi control %U", field, r)
		}
	}
	return nil
}

// isBidiControl reports the explicit directional marks, embeddings,
// overrides and isolates (Unicode's Bidi_Control property).
func isBidiControl(r rune) bool {
	return r == '\u061C' || r == '\u200E' || r == '\u200F' ||
		('\u202A' <= r && r <= '\u202E') || ('\u2066' <= r && r <= '\u2069')
}

// InvalidUTF8Field names a top-level field of a JSON object body whose raw
// value is not valid UTF-8 (the first in byte order) (encoding/json would quietly replace
// the bad bytes with U+FFFD), "body" when the bad bytes are elsewhere, and
// "" when the body is valid UTF-8.
func InvalidUTF8Field(body []byte) string {
	if utf8.Valid(body) {
		return ""
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err == nil {
		names := make([]string, 0, len(fields))
		for name := range fields {
			names = append(names, name)
		}
		sort.Strings(names) // one answer for one body
		for _, name := range names {
			if utf8.ValidString(name) && !utf8.Valid(fields[name]) {
				return name
			}
		}
	}
	return "body"
}

// TagsOrNil returns tags, nil when empty: stores and answers show no tags
// one way.
func TagsOrNil(tags []string) []string {
	if len(tags) == 0 {
		return nil
	}
	return tags
}

// UTCOrNil is t in UTC, nil for the zero time (an optional time of an answer).
func UTCOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// TextOrNil is nil for "" (an optional text of an answer).
func TextOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
