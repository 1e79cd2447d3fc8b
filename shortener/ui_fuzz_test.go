package shortener

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// FuzzSessionCookie: a cookie value is accepted only when it is exactly
// what encodeCookie made under one of the keys, and names the key that
// made it; any other bytes, including every single-byte change of a valid
// cookie, are refused; judging one never panics.
func FuzzSessionCookie(f *testing.F) {
	keys := []*signingKey{new(deriveKey([]byte(testUISecret))), new(deriveKey([]byte(testUISecret2)))}
	id := [store.SessionIDLen]byte{1, 2, 3}
	valid := encodeCookie(keys[1], id)
	f.Add(valid, 0, byte(1))
	f.Add("", 0, byte(0))
	f.Add(strings.Repeat("A", 99), 3, byte(2))
	f.Add(encodeCookie(keys[0], id), 5, byte(0))
	f.Fuzz(func(t *testing.T, v string, pos int, flip byte) {
		if got, k, ok := decodeCookie(keys, v); ok && encodeCookie(keys[k], got) != v {
			t.Fatalf("accepted %q under key %d, which encodes as %q", v, k, encodeCookie(keys[k], got))
		}
		if flip == 0 {
			return
		}
		b := []byte(valid)
		i := (pos%len(b) + len(b)) % len(b)
		b[i] ^= flip
		if string(b) == valid {
			return
		}
		if _, _, ok := decodeCookie(keys, string(b)); ok {
			t.Fatalf("accepted a changed cookie %q", b)
		}
	})
}

// FuzzSameOrigin: for any Origin and Host, sameOrigin never panics and is
// true only when a URL parser sees the same scheme and, once the host is
// lowercased and the default port dropped, the same host and port (the
// oracle: net/url's parse of both, folded independently).
func FuzzSameOrigin(f *testing.F) {
	for _, s := range [][2]string{
		{"http://sho.rt", "sho.rt"}, {"http://SHO.RT:80", "sho.rt"}, {"http://sho.rt:8080", "sho.rt:8080"},
		{"http://[::1]:80", "[::1]"}, {"http://xn--bcher-kva.example", "bücher.example"}, {"null", "sho.rt"},
		{"http://sho.rt.", "sho.rt"}, {"http://0x7f.1", "127.0.0.1"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, origin, host string) {
		r := httptest.NewRequest("POST", "http://placeholder/", nil)
		r.Host = host
		r.Header.Set("Origin", origin)
		if !sameOrigin(r) {
			return
		}
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Scheme, "http") {
			t.Fatalf("sameOrigin(%q, %q) with scheme %v, %v", origin, host, u, err)
		}
		oh, op, ok1 := originHost(u.Host, "http")
		rh, rp, ok2 := originHost(host, "http")
		if !ok1 || !ok2 || oh != rh || op != rp {
			t.Fatalf("sameOrigin(%q, %q) but hosts %q:%q and %q:%q", origin, host, oh, op, rh, rp)
		}
		if strings.ContainsAny(oh, "/@?#\\ ") {
			t.Fatalf("sameOrigin(%q, %q) accepted host %q", origin, host, oh)
		}
	})
}
