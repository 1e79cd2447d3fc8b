package link

import (
	"crypto/rand"
	"fmt"
	"math"
	"unicode/utf8"
)

// Base62 is the alphabet of generated codes, in digit order: 0-9a-zA-Z.
const Base62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// Bounds of codes chosen by users (custom) and of any code looked up.
const (
	MinCustomCodeLen = 3
	MaxCustomCodeLen = 64
)

// sequentialOffset (62^6) is added to every sequential ID so that its code
// has at least 7 characters: IDs 0 to 62^7-62^6-1 all give 7 characters.
const sequentialOffset = 62 * 62 * 62 * 62 * 62 * 62

// Character classes, indexed by byte.
var (
	base62Value [256]int8 // digit value of a Base62 byte, -1 otherwise
	customChar  [256]bool // [A-Za-z0-9_-]
)

func init() {
	for i := range base62Value {
		base62Value[i] = -1
	}
	for i := 0; i < len(Base62); i++ {
		base62Value[Base62[i]] = int8(i)
		customChar[Base62[i]] = true
	}
	customChar['_'] = true
	customChar['-'] = true
}

// APIWords are the fixed words of the API's paths (<api>/links,
// <api>/links/export, <api>/links/batch, <api>/stats and a link's
// /history, /stats and /qr): no link is created or imported with one as
// its code, so that each API path has one meaning. Codes are case
// sensitive, and so is this list.
var APIWords = [...]string{"links", "export", "batch", "stats", "history", "qr"}

// IsAPIWord reports whether code is one of APIWords.
func IsAPIWord(code string) bool {
	for _, w := range APIWords {
		if code == w {
			return true
		}
	}
	return false
}

// RandomCode returns n characters drawn uniformly from Base62 with
// crypto/rand, never one of APIWords. Random bytes of 248 or more are
// rejected so that every character is equally likely (248 = 4*62).
func RandomCode(n int) (string, error) {
	for {
		code, err := randomBase62(n)
		if err != nil || !IsAPIWord(code) {
			return code, err
		}
	}
}

func randomBase62(n int) (string, error) {
	if n < 1 {
		return "", fmt.Errorf("code length %d: must be at least 1", n)
	}
	// One buffer holds the random bytes and, compacted in place from its
	// start, the accepted characters. 1/32 of the bytes are rejected on
	// average; the slack makes a refill rare.
	buf := make([]byte, n+n/8+8)
	filled := 0
	for filled < n {
		chunk := buf[filled:]
		if _, err := rand.Read(chunk); err != nil {
			return "", fmt.Errorf("reading random bytes: %w", err)
		}
		for _, b := range chunk {
			if b >= 248 {
				continue
			}
			buf[filled] = Base62[b%62]
			filled++
			if filled == n {
				break
			}
		}
	}
	return string(buf[:n]), nil
}

// SequentialCode writes the sequential ID id as a code: id+62^6 in Base62,
// so codes have 7 characters up to id 62^7-62^6-1 and grow after that. IDs
// come from Store.NextBlock and are never negative; a negative id gives "".
func SequentialCode(id int64) string {
	if id < 0 {
		return ""
	}
	v := uint64(id) + sequentialOffset // cannot overflow: id <= MaxInt64
	var b [11]byte                     // 62^11 > 2^64
	i := len(b)
	for v > 0 {
		i--
		b[i] = Base62[v%62]
		v /= 62
	}
	return string(b[i:])
}

// SequentialID is the inverse of SequentialCode: the ID a code was written
// from, and false if no ID gives exactly this code.
func SequentialID(code string) (int64, bool) {
	if len(code) < 7 || len(code) > 11 || code[0] == '0' {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(code); i++ {
		d := base62Value[code[i]]
		if d < 0 {
			return 0, false
		}
		if v > (math.MaxUint64-uint64(d))/62 {
			return 0, false
		}
		v = v*62 + uint64(d)
	}
	if v < sequentialOffset || v-sequentialOffset > math.MaxInt64 {
		return 0, false
	}
	return int64(v - sequentialOffset), true
}

// ValidCode reports whether code has minLen to maxLen characters, all of
// Base62. It does not allocate.
func ValidCode(code string, minLen, maxLen int) bool {
	if len(code) < minLen || len(code) > maxLen {
		return false
	}
	for i := 0; i < len(code); i++ {
		if base62Value[code[i]] < 0 {
			return false
		}
	}
	return true
}

// ValidLookupCode reports whether code could name a link at all, generated
// or custom: 1 to 64 characters of [A-Za-z0-9_-]. The redirect path uses it
// to answer 404 without a lookup. It does not allocate.
func ValidLookupCode(code string) bool {
	if len(code) < 1 || len(code) > MaxCustomCodeLen {
		return false
	}
	for i := 0; i < len(code); i++ {
		if !customChar[code[i]] {
			return false
		}
	}
	return true
}

// ValidCustomCode checks a code chosen by a user: 3 to 64 characters of
// [A-Za-z0-9_-]. The error says what is wrong. (Whether the code collides
// with the API path is the handler's check.)
func ValidCustomCode(code string) error {
	if len(code) < MinCustomCodeLen || len(code) > MaxCustomCodeLen {
		return fmt.Errorf("code must be %d to %d characters long, got %d", MinCustomCodeLen, MaxCustomCodeLen, len(code))
	}
	for i := 0; i < len(code); i++ {
		if !customChar[code[i]] {
			r, _ := utf8.DecodeRuneInString(code[i:])
			return fmt.Errorf("code has %q at byte %d: only letters A-Z a-z, digits 0-9, '_' and '-' are allowed", r, i)
		}
	}
	return nil
}
