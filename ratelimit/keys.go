package ratelimit

import (
	"crypto/sha256"
	"encoding/hex"
	"unsafe"
)

// digestLen is the length of a key digest: hex of 16 bytes of SHA-256.
const digestLen = 32

// StoreKey returns the store key of one zone for one key value:
// "<prefix>:<zone>:<digest(value)>", where the digest is the hex of the
// first 16 bytes of the value's SHA-256, so raw client values (which may
// contain ':' or '{') never reach Redis. With a hashTag the key is
// "<prefix>:<zone>:{<digest(hashTag)>}<digest(value)>": every zone of a
// request then shares one Redis Cluster slot and is decided in one atomic
// call. An empty value has a digest like any other.
func StoreKey(prefix, zone, hashTag, value string) string {
	n := len(prefix) + 1 + len(zone) + 1 + digestLen
	if hashTag != "" {
		n += digestLen + 2
	}
	b := make([]byte, 0, n)
	b = append(b, prefix...)
	b = append(b, ':')
	b = append(b, zone...)
	b = append(b, ':')
	if hashTag != "" {
		b = append(b, '{')
		b = appendDigest(b, hashTag)
		b = append(b, '}')
	}
	b = appendDigest(b, value)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// appendDigest appends the hex of the first 16 bytes of SHA-256(s).
func appendDigest(b []byte, s string) []byte {
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s))) // read only
	return hex.AppendEncode(b, sum[:digestLen/2])
}
