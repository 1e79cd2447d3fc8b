package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// FuzzParseRetryAfter: no value makes it panic or leave [0, MaxRetryAfter],
// and delay-seconds within the bound are read exactly.
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	for _, s := range []string{"", "0", "120", "86401", "-1", "1e3", "99999999999999999999",
		now.Add(time.Hour).Format(http.TimeFormat), now.Add(-time.Hour).Format(time.RFC850), "Sun Nov  6 08:49:37 1994"} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, v string, shift int64) {
		at := now.Add(time.Duration(shift))
		d := ParseRetryAfter(v, at)
		if d < 0 || d > MaxRetryAfter {
			t.Fatalf("ParseRetryAfter(%q) = %v, out of [0, %v]", v, d, MaxRetryAfter)
		}
		if sec, err := strconv.ParseUint(v, 10, 64); err == nil && isDigits(v) && sec <= uint64(MaxRetryAfter/time.Second) &&
			d != time.Duration(sec)*time.Second {
			t.Fatalf("ParseRetryAfter(%q) = %v, want %ds", v, d, sec)
		}
	})
}

// FuzzVerify: Verify accepts exactly what Headers signed with a matching
// secret while within Tolerance of the timestamp; a single byte replaced,
// inserted or deleted in the id, the timestamp or the body, or another
// secret, is refused.
func FuzzVerify(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef"), "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", int64(1765000000), []byte(`{"a":1}`), int64(30), uint8(0), uint16(3), byte(1))
	f.Add([]byte("k"), "a", int64(1), []byte{}, int64(-300), uint8(5), uint16(0), byte(0x80))
	f.Add([]byte("secret"), "msg-x_Y", int64(9999999999), []byte("\x00\xff."), int64(301), uint8(2), uint16(9), byte('.'))
	f.Fuzz(func(t *testing.T, key []byte, id string, unix int64, body []byte, skew int64, edit uint8, pos uint16, b byte) {
		if !signableID(id) {
			t.Skip()
		}
		s := fuzzSecret(key)
		ts := time.Unix(1+int64(uint64(unix)%4e9), 0)
		h, err := Headers(id, ts, body, s)
		if err != nil {
			t.Fatalf("Headers(%q): %v", id, err)
		}
		tol := int64(Tolerance / time.Second)
		skew %= 3 * tol
		now := ts.Add(time.Duration(skew) * time.Second)
		err = Verify(h, body, now, s)
		if within := abs(skew) <= tol; within != (err == nil) || !within && !errors.Is(err, ErrTimestamp) {
			t.Fatalf("Verify() %ds from the timestamp = %v", skew, err)
		}
		now = ts // from here on, what was signed is accepted
		other := fuzzSecret(append([]byte{b ^ 1}, key...))
		if err := Verify(h, body, now, other); err == nil && other.Encode() != s.Encode() {
			t.Fatal("Verify() accepted another secret")
		}
		h2, body2 := h.Clone(), body
		switch edit % 3 {
		case 0:
			h2.Set(HeaderID, editByte(id, edit/3, pos, b))
		case 1:
			h2.Set(HeaderTimestamp, editByte(h.Get(HeaderTimestamp), edit/3, pos, b))
		case 2:
			body2 = []byte(editByte(string(body), edit/3, pos, b))
		}
		if err := Verify(h2, body2, now, s); err == nil {
			t.Fatalf("Verify() accepted a tampered message: %q %q %q", h2.Get(HeaderID), h2.Get(HeaderTimestamp), body2)
		}
	})
}

// fuzzSecret makes a valid secret of any bytes (padded or cut to the bounds).
func fuzzSecret(key []byte) Secret {
	k := append([]byte(nil), key...)
	for len(k) < MinSecretBytes {
		k = append(k, byte(len(k)))
	}
	return Secret{key: k[:min(len(k), MaxSecretBytes)]}
}

// editByte changes s by one byte at pos (wrapped): kind 0 replaces it
// with a different byte, 1 inserts b, 2 (and more) deletes it.
func editByte(s string, kind uint8, pos uint16, b byte) string {
	if s == "" {
		return string([]byte{b})
	}
	i := int(pos) % len(s)
	switch kind % 3 {
	case 0:
		if b == s[i] {
			b++
		}
		return s[:i] + string([]byte{b}) + s[i+1:]
	case 1:
		return s[:i] + string([]byte{b}) + s[i:]
	default:
		return s[:i] + s[i+1:]
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
