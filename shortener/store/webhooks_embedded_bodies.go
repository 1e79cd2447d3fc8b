package store

import (
	"errors"

	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// Message bodies in the embedded store. A body of at least
// packBodiesFrom bytes is kept S2-compressed after a bodyS2Tag byte, which
// no JSON body starts with; a shorter one, and every body written before
// bodies were compressed, as it is. A click batch's JSON repeats its keys
// a hundred times: a 25 KB body is kept in about 5 KB, so the store writes
// (and syncs) a fifth of the bytes, for some 7 µs of compression a body
// and 3 µs to read it back.
const (
	bodyS2Tag      = 0x00
	packBodiesFrom = 1024
)

var errBadBody = errors.New("store: a webhook message's stored body is damaged")

// bodyPacker compresses one transaction's bodies into one buffer (a
// recordBuffer's arena: bbolt holds the bytes it was given until its
// transaction ends, so the buffer goes back only after that), each Put
// given its own part (a growth moves on to a new array, leaving the parts
// given before in place).
type bodyPacker struct{ buf *recordBuffer }

func newBodyPacker() bodyPacker { return bodyPacker{buf: getRecordBuffer()} }

// pack is body as it is stored.
func (p bodyPacker) pack(body []byte) []byte {
	if len(body) < packBodiesFrom {
		return body
	}
	b := p.buf.arena
	start := len(b)
	need := 1 + s2.MaxEncodedLen(len(body))
	if cap(b)-start < need {
		b = make([]byte, 0, max(need, 2*cap(b))) // the old array stays with what bbolt holds
		start = 0
	}
	b = append(b, bodyS2Tag)
	enc := s2.Encode(b[len(b):len(b)+need-1], body)
	b = b[:len(b)+len(enc)]
	p.buf.arena = b
	return b[start:len(b):len(b)]
}

// release gives the buffer back once the transaction has ended.
func (p bodyPacker) release() {
	p.buf.arena = p.buf.arena[:0]
	putRecordBuffer(p.buf)
}

// put stores body under the message's id, as pack makes it, in p's
// memory.
func (p bodyPacker) put(bodies *bolt.Bucket, id string, body []byte) error {
	return bodies.Put([]byte(id), p.pack(body))
}

// unpackBody is a stored body as it was given, in the memory alloc(n)
// returns (length n); stored is bbolt's and is only read.
func unpackBody(stored []byte, alloc func(n int) []byte) ([]byte, error) {
	if len(stored) == 0 || stored[0] != bodyS2Tag {
		return append(alloc(len(stored))[:0], stored...), nil
	}
	n, err := s2.DecodedLen(stored[1:])
	if err != nil || n > maxStoredBody {
		return nil, errBadBody
	}
	out, err := s2.Decode(alloc(n), stored[1:])
	if err != nil || len(out) != n {
		return nil, errBadBody
	}
	return out, nil
}

// maxStoredBody bounds what a stored body may say it decodes to: no
// message body is made larger (a click batch of MaxBatch clicks is a few
// hundred KB).
const maxStoredBody = 16 << 20
