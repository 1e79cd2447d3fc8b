package store

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"
	"unsafe"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// readClickRecords appends to events the clicks of the record numbered
// first (v, clickRecordsTag), from its skip-th on, while fewer than
// limit, their data the ClickEvent's JSON written in a. Each click is
// read on from the ones before it: those skipped are decoded, not
// rendered.
func readClickRecords(events []link.Event, first int64, v []byte, skip, limit int, a *eventArena) ([]link.Event, error) {
	take := min(int(recordEvents(v))-skip, limit-len(events))
	if take <= 0 {
		return events, nil
	}
	ids := clickIDs(v[21:29], first+int64(skip), take)
	var r clickReader
	rest := v[clickRecordsHeader:]
	for i := range skip + take {
		var err error
		if rest, err = r.next(rest); err != nil {
			return events, fmt.Errorf("event %d: %w", first+int64(i), err)
		}
		if i >= skip {
			j := (i - skip) * clickIDLen
			events = append(events, link.Event{Cursor: link.EventCursor{Seq: first + int64(i)}, ID: ids[j : j+clickIDLen],
				Type: clicks.EventType, At: r.at, Code: r.code, Data: a.json(r.event())})
		}
	}
	return events, nil
}

// clickIDLen is a click event's id's length: "evt_" and 32 hex digits.
const clickIDLen = 4 + 32

// clickIDs are the ids of n clicks numbered from seq, whose random half
// is half, one after the other in one string (one allocation for them
// all): "evt_", then the hex of half and of the number's 8 bytes.
func clickIDs(half []byte, seq int64, n int) string {
	b := make([]byte, 0, n*clickIDLen)
	var num [8]byte
	for i := range n {
		binary.BigEndian.PutUint64(num[:], uint64(seq+int64(i)))
		b = hex.AppendEncode(hex.AppendEncode(append(b, "evt_"...), half), num[:])
	}
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
}

// clickReader is where a record of clicks has been read to: the last
// click's time, code, fields (sharing the record's memory) and visitor.
type clickReader struct {
	ns      int64
	at      time.Time
	code    string
	fields  clicks.ClickEvent
	visitor uint64
	hex     [16]byte // visitor's
}

// next reads the next click from rest, what its flags say changed, and
// returns what follows it.
func (r *clickReader) next(rest []byte) ([]byte, error) {
	if len(rest) < 1 {
		return nil, errClickRecords
	}
	flags := rest[0]
	rest = rest[1:]
	r.at = time.Time{}
	if flags&clickNoTime == 0 {
		d, w := binary.Varint(rest)
		if w <= 0 {
			return nil, errClickRecords
		}
		r.ns += d // wraps as the writer's difference did
		r.at, rest = time.Unix(0, r.ns).UTC(), rest[w:]
	}
	if flags&clickNewCode != 0 {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return nil, errClickRecords
		}
		r.code, rest = string(rest[w:w+int(n)]), rest[w+int(n):]
	}
	if flags&clickNewFields != 0 {
		var err error
		if rest, err = readClickFields(rest, &r.fields); err != nil {
			return nil, err
		}
	}
	if flags&clickNewVisitor != 0 {
		if len(rest) < 8 {
			return nil, errClickRecords
		}
		hex.Encode(r.hex[:], rest[:8])
		r.visitor, rest = binary.BigEndian.Uint64(rest), rest[8:]
	}
	return rest, nil
}

// event is the last click's event. Its strings share the record's and
// r's memory: it lives until the next read.
func (r *clickReader) event() clicks.ClickEvent {
	e := r.fields
	e.Domain, e.Code = link.SplitDomainKey(r.code)
	e.At = r.at
	if r.visitor != 0 {
		e.Visitor = unsafe.String(&r.hex[0], len(r.hex))
	}
	return e
}
