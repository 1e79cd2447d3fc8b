package limiter

import (
	"bytes"
	"context"
	"encoding/hex"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzUsageKey: any expanded key (hostile: it comes from the request) is
// kept as itself when at most MaxUsageKeyLen bytes of UTF-8, else as
// "sha256:" and 32 hex digits; the script receives exactly that text in
// hex; the memory store lists it back as kept, its store key unchanged.
func FuzzUsageKey(f *testing.F) {
	for _, seed := range []string{"", "acme", "\xff\xfe", "é" + string(make([]byte, 300)), "a u 12 ff t 3"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		text := UsageKeyText(key)
		short := len(key) <= MaxUsageKeyLen && utf8.ValidString(key)
		if short && text != key || !short && (len(text) != len("sha256:")+DigestLen || text[:7] != "sha256:") || !utf8.ValidString(text) {
			t.Fatalf("UsageKeyText(%q) = %q", key, text)
		}
		arg := appendUsage(nil, Usage{Key: key, Keep: time.Hour})
		sent, err := hex.DecodeString(string(arg[bytes.LastIndexByte(arg, ' ')+1:]))
		if err != nil || string(sent) != text || !bytes.HasPrefix(arg, []byte(" u 3600000 ")) {
			t.Fatalf("burst argument %q for %q", arg, key)
		}
		s := NewMemoryStore(nil, 0)
		sk := StoreKey("p", "z", "", key)
		res, err := s.Decide(context.Background(), []Ask{{Key: sk, Limit: Limit{Algorithm: FixedWindow, Events: 2, Window: time.Hour}, Cost: 1,
			Usage: Usage{Key: key, Keep: time.Hour}}})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := s.Usage(context.Background(), "p", "z", res[0].Now.Truncate(time.Hour))
		if err != nil || len(rows) != 1 || rows[0].Key != text || rows[0].StoreKey != sk || rows[0].Units != 1 {
			t.Fatalf("usage of %q: %+v %v", key, rows, err)
		}
	})
}
