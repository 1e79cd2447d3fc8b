package limiter

import (
	"encoding/binary"
	"testing"
	"time"
)

// replyFrom builds a script reply of any shape from fuzz bytes: each byte
// pair picks an item kind (int64, string, nil, float, nested array) and a
// value; n is the number of asks the caller expects.
func replyFrom(data []byte) (any, int) {
	if len(data) == 0 {
		return nil, 0
	}
	n := int(data[0] % 5)
	data = data[1:]
	var items []any
	for len(data) >= 9 {
		kind, v := data[0], int64(binary.LittleEndian.Uint64(data[1:9]))
		data = data[9:]
		switch kind % 8 {
		case 0, 1, 2, 3: // the common case: integers, often small
			if kind%2 == 0 {
				v %= 3
			}
			items = append(items, v)
		case 4:
			items = append(items, string(rune(v)))
		case 5:
			items = append(items, nil)
		case 6:
			items = append(items, float64(v))
		case 7:
			items = append(items, []any{v})
		}
	}
	if len(data) > 0 && data[0]%2 == 1 {
		return items, n // the reply as an array
	}
	if len(items) > 0 {
		return items[0], n // a scalar reply
	}
	return items, n
}

// FuzzDecodeReply: any reply shape gives results or an error, never a
// panic; accepted results are one per ask, with sane fields.
func FuzzDecodeReply(f *testing.F) {
	le := func(kind byte, v int64) []byte {
		b := make([]byte, 9)
		b[0] = kind
		binary.LittleEndian.PutUint64(b[1:], uint64(v))
		return b
	}
	ok := []byte{1} // one ask
	ok = append(ok, le(1, 1_800_000_000_000_000)...)
	for _, v := range []int64{1, 4, 0, 60_000_000, 0} {
		ok = append(ok, le(1, v)...)
	}
	f.Add(append(ok, 1))
	f.Add(append(ok, 0))
	for _, verdict := range []int64{4, 5, 6, 7} { // a first refusal (4, 7), or not a verdict
		first := []byte{1}
		first = append(first, le(1, 1_800_000_000_000_000)...)
		for _, v := range []int64{verdict, 0, 1000, 60_000_000, 0} {
			first = append(first, le(1, v)...)
		}
		f.Add(append(first, 1))
	}
	f.Add([]byte{2, 1})
	f.Add([]byte{0, 1})
	f.Add(append(append([]byte{1}, le(4, 'x')...), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		reply, n := replyFrom(data)
		results, now, err := decodeReply(reply, n)
		if err != nil {
			return
		}
		if len(results) != n {
			t.Fatalf("%d results for %d asks", len(results), n)
		}
		for _, r := range results {
			if r.Remaining < 0 || r.Reset < 0 {
				t.Errorf("negative Remaining %d or Reset %v", r.Remaining, r.Reset)
			}
			if !r.Now.Equal(time.UnixMicro(now)) {
				t.Errorf("Now %v, want the reply's clock %v", r.Now, time.UnixMicro(now))
			}
			if r.First && (r.Allowed || r.Banned && !r.BanSet) {
				t.Errorf("First on %+v: only a refusal, or the one that sets a ban, is first", r)
			}
		}
	})
}

// FuzzStoreKey: two different values never share a key, and a key's
// length depends only on the prefix, the zone and the hash tag's presence.
func FuzzStoreKey(f *testing.F) {
	f.Add("a", "b", "")
	f.Add("a:b", "a{b}", "tag")
	f.Add("", "\x00", "{")
	f.Fuzz(func(t *testing.T, a, b, tag string) {
		ka, kb := StoreKey("rl", "z", tag, a), StoreKey("rl", "z", tag, b)
		if a != b && ka == kb {
			t.Fatalf("values %q and %q share key %q", a, b, ka)
		}
		want := len("rl:z:") + DigestLen
		if tag != "" {
			want += DigestLen + 2
		}
		if len(ka) != want || len(kb) != want {
			t.Fatalf("key lengths %d, %d, want %d", len(ka), len(kb), want)
		}
	})
}
