package clicks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"net/netip"
)

// visitorHasher computes VisitorHash for the writer without its per-click
// costs: the HMAC is keyed once per salt (Reset restores the keyed state
// instead of hashing the key again) and the address is written from a
// buffer, so a click costs two SHA-256 compressions and no allocation.
// Not safe for concurrent use: the recorder's writer owns it.
type visitorHasher struct {
	salt []byte // the key m was made with
	m    hash.Hash
	buf  []byte // the length prefix, address and user agent of one click
	sum  [sha256.Size]byte
}

// hash returns VisitorHash(salt, addr.String(), ua).
func (v *visitorHasher) hash(salt []byte, addr netip.Addr, ua string) uint64 {
	if v.m == nil || !hmac.Equal(v.salt, salt) {
		v.salt, v.m = salt, hmac.New(sha256.New, salt)
	}
	v.m.Reset()
	b := append(v.buf[:0], 0, 0, 0, 0)
	b = addr.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	b = append(b, ua...)
	v.m.Write(b)
	v.buf = b[:0]
	return binary.BigEndian.Uint64(v.m.Sum(v.sum[:0]))
}
