package limiter

import (
	"crypto/sha256"
	"encoding/hex"
	"unsafe"
)

// DigestLen is the length of a key digest: hex of 16 bytes of SHA-256.
const DigestLen = 32

// StoreKey returns the store key of one zone for one key value:
// "<prefix>:<zone>:<digest(value)>", where the digest is the hex of the
// first 16 bytes of the value's SHA-256, so raw client values (which may
// contain ':' or '{') never reach Redis. With a hashTag the key is
// "<prefix>:<zone>:{<digest(hashTag)>}<digest(value)>": every zone of a
// request then shares one Redis Cluster slot and is decided in one atomic
// call. An empty value has a digest like any other.
func StoreKey(prefix, zone, hashTag, value string) string {
	var tb [DigestLen]byte
	var tag []byte
	if hashTag != "" {
		tag = AppendDigest(tb[:0], hashTag)
	}
	b := AppendStoreKey(make([]byte, 0, StoreKeyLen(prefix, zone, tag)), prefix, zone, tag, value)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// StoreKeyLen is the length of a store key; tag is the hash tag's digest
// (or empty).
func StoreKeyLen(prefix, zone string, tag []byte) int {
	n := len(prefix) + 1 + len(zone) + 1 + DigestLen
	if len(tag) > 0 {
		n += len(tag) + 2
	}
	return n
}

// AppendStoreKey appends the store key of value to b, with tag (the hash
// tag's digest, computed once per request; empty: none).
func AppendStoreKey(b []byte, prefix, zone string, tag []byte, value string) []byte {
	b = append(b, prefix...)
	b = append(b, ':')
	b = append(b, zone...)
	b = append(b, ':')
	if len(tag) > 0 {
		b = append(b, '{')
		b = append(b, tag...)
		b = append(b, '}')
	}
	return AppendDigest(b, value)
}

// AppendDigest appends the hex of the first 16 bytes of SHA-256(s).
func AppendDigest(b []byte, s string) []byte {
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s))) // read only
	return hex.AppendEncode(b, sum[:DigestLen/2])
}
