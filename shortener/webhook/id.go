package webhook

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"time"
)

// IDPrefix starts every message id.
const IDPrefix = "msg_"

// idEncoding is base32 with Crockford's alphabet in lower case (no i, l,
// o, u): in byte order, so ids sort as their bytes do.
var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// idLen is the length of an id: the prefix and 26 characters for 16 bytes.
const idLen = len(IDPrefix) + 26

// NewID makes a message id: "msg_" followed by 26 characters of
// lower-case Crockford base32 encoding 16 bytes, the first 6 the Unix time
// of now in milliseconds (big-endian), the other 10 from crypto/rand.
// Ids made later sort after earlier ones (to the millisecond), and 80
// random bits make two equal ids as good as impossible. A message keeps
// its id across retries and replays: receivers dedupe on it (the
// Standard Webhooks webhook-id header). It holds no '.', as the signed
// content "{id}.{timestamp}.{body}" requires.
func NewID(now time.Time) string {
	var b [16]byte
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(now.UnixMilli()))
	copy(b[:6], ms[2:])
	_, _ = rand.Read(b[6:]) // never fails (crypto/rand, Go 1.24+)
	return IDPrefix + idEncoding.EncodeToString(b[:])
}

// ValidID reports an id of NewID's form, for ids that come back from
// outside (the API's replay, a receiver's report).
func ValidID(id string) bool {
	if len(id) != idLen || id[:len(IDPrefix)] != IDPrefix {
		return false
	}
	b, err := idEncoding.DecodeString(id[len(IDPrefix):])
	return err == nil && idEncoding.EncodeToString(b) == id[len(IDPrefix):]
}
