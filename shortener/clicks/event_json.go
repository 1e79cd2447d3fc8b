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
// U+2029 as \u escapes, invalid UTF-8 as U+FFFD.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
