package clicks

import (
	"net/netip"
	"testing"
)

// FuzzVisitorHasher: the writer's reusable hasher gives exactly
// VisitorHash of the address's text, across salt changes, so uniques do
// not move between instances running either.
func FuzzVisitorHasher(f *testing.F) {
	f.Add([]byte("salt-one"), []byte{192, 0, 2, 1}, "Mozilla/5.0", false)
	f.Add([]byte("salt-two"), []byte{0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "", true)
	f.Add([]byte{}, []byte{10, 0, 0, 1}, "curl/8.0", true)
	var h visitorHasher
	f.Fuzz(func(t *testing.T, salt, ip []byte, ua string, flip bool) {
		addr, ok := netip.AddrFromSlice(ip)
		if !ok {
			return
		}
		if flip { // a salt seen before, then this one
			h.hash([]byte("previous"), addr, ua)
		}
		want := VisitorHash(salt, addr.String(), ua)
		for range 2 { // and again on the reset state
			if got := h.hash(salt, addr, ua); got != want {
				t.Fatalf("hash(%x, %v, %q) = %x, visitorHash %x", salt, addr, ua, got, want)
			}
		}
	})
}
