package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
)

// A message's state and an attempt are stored in a binary form: the
// dispatcher reads and rewrites a message's state at every delivery
// (hundreds a second for a busy endpoint), where JSON's reflection cost
// more than the rest of the store's work on it. A message record is
// messageRecordTag, then its id, endpoint, type and state (each a uvarint
// length and bytes), then its time, events, attempts, next time, series
// and time made (varints; times in Unix µs). An attempt record is
// attemptRecordTag, then its time, status and latency (µs) as varints,
// then its answer's start and its error (a uvarint length and bytes
// each). A record starting with '{' is JSON, as versions before wrote
// them, and is read as such.
const (
	messageRecordTag = 0x01
	attemptRecordTag = 0x01
)

var errStoredRecord = errors.New("a stored webhook record cut short")

func appendMessageRecord(b []byte, m embeddedMessage) []byte {
	b = append(b, messageRecordTag)
	for _, s := range [...]string{m.ID, m.Endpoint, m.Type, m.State} {
		b = appendRecordBytes(b, s)
	}
	for _, v := range [...]int64{m.At, int64(m.Events), int64(m.Attempts), m.NextAt, int64(m.Series), m.MadeAt} {
		b = binary.AppendVarint(b, v)
	}
	return b
}

func decodeMessageRecord(v []byte) (embeddedMessage, error) {
	return decodeRecord(v, messageRecordTag, func(r *recordReader, m *embeddedMessage) {
		m.ID, m.Endpoint, m.Type, m.State = r.text(), r.text(), r.text(), r.text()
		m.At, m.Events, m.Attempts, m.NextAt, m.Series, m.MadeAt = r.int(), int(r.int()), int(r.int()), r.int(), int(r.int()), r.int()
	})
}

func appendAttemptRecord(b []byte, a embeddedAttempt) []byte {
	b = append(b, attemptRecordTag)
	b = binary.AppendVarint(b, a.At)
	b = binary.AppendVarint(b, int64(a.Status))
	b = binary.AppendVarint(b, a.LatencyUS)
	b = appendRecordBytes(b, string(a.Body))
	return appendRecordBytes(b, a.Error)
}

func decodeAttemptRecord(v []byte) (embeddedAttempt, error) {
	return decodeRecord(v, attemptRecordTag, func(r *recordReader, a *embeddedAttempt) {
		a.At, a.Status, a.LatencyUS = r.int(), int(r.int()), r.int()
		if body := r.text(); body != "" {
			a.Body = []byte(body)
		}
		a.Error = r.text()
	})
}

// decodeRecord reads a record of the binary form tagged tag with read, or
// the JSON versions before wrote.
func decodeRecord[T any](v []byte, tag byte, read func(*recordReader, *T)) (T, error) {
	var x T
	if len(v) > 0 && v[0] == '{' {
		return x, json.Unmarshal(v, &x)
	}
	if len(v) == 0 || v[0] != tag {
		return x, errStoredRecord
	}
	r := recordReader{rest: v[1:]}
	read(&r, &x)
	return x, r.err
}

// appendRecordBytes appends s's length (a uvarint) and s.
func appendRecordBytes(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// recordReader reads a record's fields in order; after the first that
// is cut short, every read is a zero and err says so.
type recordReader struct {
	rest []byte
	err  error
}

// text reads a length and bytes, copied (a bucket's memory lives as long
// as its transaction).
func (r *recordReader) text() string {
	n, w := binary.Uvarint(r.rest)
	if w <= 0 || n > uint64(len(r.rest)-w) {
		r.fail()
		return ""
	}
	s := string(r.rest[w : w+int(n)])
	r.rest = r.rest[w+int(n):]
	return s
}

func (r *recordReader) int() int64 {
	v, w := binary.Varint(r.rest)
	if w <= 0 {
		r.fail()
		return 0
	}
	r.rest = r.rest[w:]
	return v
}

func (r *recordReader) fail() { r.rest, r.err = nil, errStoredRecord }
