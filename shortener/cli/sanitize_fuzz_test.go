package cli

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// bidiOrSeparator is the oracle's own list of what Sanitize must remove
// besides Unicode's control characters.
func bidiOrSeparator(r rune) bool {
	switch r {
	case 0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x2028, 0x2029:
		return true
	}
	return false
}

// FuzzSanitize: the output is valid UTF-8 with no control character
// (unicode.IsControl: C0, DEL, C1), bidi control or separator; text
// without any of them comes back unchanged; Sanitize is idempotent.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"", "plain text", "Spring sale flyer", "日本語のタイトル", "emoji 🎉 ok",
		"\x1b[31mred\x1b[0m", "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07", "\x1b]0;title\x1b\\rest",
		"a\u202egnp.exe", "tab\there", "line\nbreak\r\n", "\xc2\x9b31mC1 CSI", "\xc2\x9d0;x\xc2\x9cafter",
		"\xff\xfeinvalid", "\x1bPdcs\x1b\\", "\x1b", "\x1b[", "ok\x7fdel", "\u2028sep\u2029",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Sanitize(in)
		if !utf8.ValidString(out) {
			t.Fatalf("Sanitize(%q) = %q: not UTF-8", in, out)
		}
		for _, r := range out {
			if unicode.IsControl(r) || bidiOrSeparator(r) {
				t.Fatalf("Sanitize(%q) = %q holds %U", in, out, r)
			}
		}
		clean := utf8.ValidString(in)
		for _, r := range in {
			clean = clean && !unicode.IsControl(r) && !bidiOrSeparator(r)
		}
		if clean && out != in {
			t.Fatalf("Sanitize(%q) = %q, want it unchanged", in, out)
		}
		if again := Sanitize(out); again != out {
			t.Fatalf("Sanitize(Sanitize(%q)) = %q, want %q", in, again, out)
		}
	})
}

func TestSanitizeExamples(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b[31mred\x1b[0m": "red",
		"\x1b]8;;https://evil.example\x07click\x1b]8;;\x07": "click",
		"a\u202egnp.exe":    "agnp.exe",
		"line\nbreak":       "line break",
		"\xc2\x9b31mC1":     "C1",
		"bad\xffbyte":       "bad\ufffdbyte",
		"Spring sale flyer": "Spring sale flyer",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}
