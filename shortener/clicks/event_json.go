package clicks

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends the event as JSON, the same object json.Marshal
// writes (field order aside from nothing: the same order too), without
// reflection: the click sink writes one per counted click.
func (e ClickEvent) AppendJSON(b []byte) []byte {
	b = append(b, `{"code":`...)
	b = AppendJSONString(b, e.Code)
	b = appendField(b, "domain", e.Domain, true)
	b = append(b, `,"at":"`...)
	b = e.At.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","bot":`...)
	b = strconv.AppendBool(b, e.Bot)
	b = appendField(b, "referrer", e.Referrer, true)
	b = appendField(b, "country", e.Country, false)
	b = appendField(b, "region", e.Region, true)
	b = appendField(b, "city", e.City, true)
	b = appendField(b, "device", e.Device, false)
	b = appendField(b, "os", e.OS, false)
	b = appendField(b, "browser", e.Browser, false)
	b = appendField(b, "source", e.Source, false)
	b = appendField(b, "rule", e.Rule, true)
	b = appendField(b, "variant", e.Variant, true)
	b = appendField(b, "visitor", e.Visitor, true)
	return append(b, '}')
}

// appendField appends ,"name":"v", or nothing for an empty v that is
// omitempty.
func appendField(b []byte, name, v string, omitEmpty bool) []byte {
	if omitEmpty && v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return AppendJSONString(b, v)
}

// AppendJSONString appends s as a JSON string as encoding/json writes it:
// '"', '\\' and control characters escaped, '<', '>', '&' and U+2028,
// U+2029 as \u escapes, invalid UTF-8 as U+FFFD. Runs that need no
// escape are appended whole.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf && jsonPlain[c] {
			i++
			continue
		}
		size := 1
		if c >= utf8.RuneSelf {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			if !(r == utf8.RuneError && size == 1) && r != '\u2028' && r != '\u2029' {
				i += size
				continue
			}
		}
		b = appendJSONEscape(append(b, s[start:i]...), s[i:i+size])
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonPlain: the ASCII bytes a JSON string holds as they are.
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONEscape appends the escape of one byte or rune that needs one.
func appendJSONEscape(b []byte, r string) []byte {
	const hex = "0123456789abcdef"
	if len(r) > 1 { // U+2028, U+2029
		return append(b, '\\', 'u', '2', '0', '2', hex[r[2]&0xf])
	}
	switch c := r[0]; {
	case c >= utf8.RuneSelf:
		return append(b, `\ufffd`...)
	case c == '"' || c == '\\':
		return append(b, '\\', c)
	case c == '\n':
		return append(b, '\\', 'n')
	case c == '\r':
		return append(b, '\\', 'r')
	case c == '\t':
		return append(b, '\\', 't')
	case c == '\b':
		return append(b, '\\', 'b')
	case c == '\f':
		return append(b, '\\', 'f')
	default: // control characters, '<', '>', '&'
		return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
	}
}
