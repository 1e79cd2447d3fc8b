package cli

import (
	"strings"
	"unicode/utf8"
)

// Sanitize makes text from the API or an import file safe to print on a
// terminal: escape sequences (ESC followed by a CSI, OSC, DCS, SOS, PM or
// APC string, or by one character, and their C1 forms) are removed whole;
// every other C0 or C1 control character, DEL, bidi control (U+061C,
// U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069) and line or
// paragraph separator (U+2028, U+2029) is removed, except that a tab, a
// line feed and a carriage return become one space each; bytes that are
// not UTF-8 become U+FFFD. Text with none of these comes back unchanged.
func Sanitize(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == 0x9b || r == 0x90 || r == 0x9d || r == 0x98 || r == 0x9e || r == 0x9f:
			i += size + stringBodyLen(s[i+size:], r == 0x9b)
			continue
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case !unsafeRune(r):
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPrintable reports whether s is valid UTF-8 without a rune Sanitize
// removes.
func isPrintable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unsafeRune(r) {
			return false
		}
	}
	return true
}

// unsafeRune reports whether r is a control, bidi control or separator
// that must not reach a terminal.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// escapeLen is the length of the escape sequence s starts with (s[0] is
// ESC): ESC [ ... final byte (CSI); ESC ] P X ^ _ ... string terminator
// (OSC, DCS, SOS, PM, APC); otherwise ESC and the one character after it.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		return 2 + stringBodyLen(s[2:], true)
	case ']', 'P', 'X', '^', '_':
		return 2 + stringBodyLen(s[2:], false)
	}
	_, size := utf8.DecodeRuneInString(s[1:])
	return 1 + size
}

// stringBodyLen is the length of a control sequence's body up to and
// including its end: for a CSI the final byte (0x40 to 0x7E) after
// parameter and intermediate bytes (0x20 to 0x3F); for a control string
// BEL, ESC \ or ST (U+009C). A body that never ends runs to the end of s.
func stringBodyLen(s string, csi bool) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if csi {
			if c >= 0x40 && c <= 0x7e {
				return i + 1
			}
			if c < 0x20 || c > 0x3f {
				return i // not a CSI byte: the sequence ends before it
			}
			continue
		}
		switch {
		case c == 0x07:
			return i + 1
		case c == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case c == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c:
			return i + 2
		}
	}
	return len(s)
}
