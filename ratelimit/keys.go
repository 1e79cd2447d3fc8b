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
	var tb [digestLen]byte
	var tag []byte
	if hashTag != "" {
		tag = appendDigest(tb[:0], hashTag)
	}
	b := appendStoreKey(make([]byte, 0, storeKeyLen(prefix, zone, tag)), prefix, zone, tag, value)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// storeKeyLen is the length of a store key; tag is the hash tag's digest
// (or empty).
func storeKeyLen(prefix, zone string, tag []byte) int {
	n := len(prefix) + 1 + len(zone) + 1 + digestLen
	if len(tag) > 0 {
		n += len(tag) + 2
	}
	return n
}

// appendStoreKey appends the store key of value to b, with tag (the hash
// tag's digest, computed once per request; empty: none).
func appendStoreKey(b []byte, prefix, zone string, tag []byte, value string) []byte {
	b = append(b, prefix...)
	b = append(b, ':')
	b = append(b, zone...)
	b = append(b, ':')
	if len(tag) > 0 {
		b = append(b, '{')
		b = append(b, tag...)
		b = append(b, '}')
	}
	return appendDigest(b, value)
}

// appendDigest appends the hex of the first 16 bytes of SHA-256(s).
func appendDigest(b []byte, s string) []byte {
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s))) // read only
	return hex.AppendEncode(b, sum[:digestLen/2])
}
