package store

import (
	"encoding/binary"
	"fmt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// The click records earlier versions wrote, read still: an outbox keeps
// them until the retention lets them go.
//
// legacyRecordsTag starts a record of many clicks: its count (4 bytes),
// its oldest and newest click times (Unix µs, 8 bytes each), then each
// click whole: its id's 16 bytes, its time (Unix ns, 8), its code's
// length (2) and code, its fields' length (4) and fields
// (appendClickFields). clickRecordTag starts a single click's record:
// the id's 16 bytes, the time (Unix µs, 8), the code's length (2) and the
// code, then the ClickEvent's JSON. Integers are big-endian.
const (
	clickRecordTag      = 0x01
	legacyRecordsTag    = 0x02
	legacyRecordsHeader = 1 + 4 + 8 + 8
)

// readRecordedClicks (legacyRecordsTag) appends to events the clicks of the record numbered
// first (v), from its skip-th on, while fewer than limit, their data the
// ClickEvent's JSON; copies go to a (the bucket's memory lives as long as
// its transaction).
func readRecordedClicks(events []link.Event, first int64, v []byte, skip, limit int, a *eventArena) ([]link.Event, error) {
	count := int(recordEvents(v))
	rest := v[legacyRecordsHeader:]
	for i := 0; i < count && len(events) < limit; i++ {
		if len(rest) < 16+8+2 {
			return events, fmt.Errorf("event %d: %w", first+int64(i), errClickRecords)
		}
		n := int(binary.BigEndian.Uint16(rest[24:26]))
		if len(rest) < 26+n+4 {
			return events, fmt.Errorf("event %d: %w", first+int64(i), errClickRecords)
		}
		m := int(binary.BigEndian.Uint32(rest[26+n : 30+n]))
		if len(rest)-30-n < m {
			return events, fmt.Errorf("event %d: %w", first+int64(i), errClickRecords)
		}
		if i >= skip {
			at := fromUnixNano(int64(binary.BigEndian.Uint64(rest[16:24])))
			key := rest[26 : 26+n]
			id, code := a.text(rest[:16], key)
			var e clicks.ClickEvent
			if _, err := readClickFields(rest[30+n:30+n+m], &e); err != nil {
				return events, fmt.Errorf("event %d: %w", first+int64(i), err)
			}
			e.Domain, e.Code = link.SplitDomainKey(code)
			e.At = at
			events = append(events, link.Event{Cursor: link.EventCursor{Seq: first + int64(i)}, ID: id, Type: clicks.EventType,
				At: at, Code: code, Data: a.json(e)})
		}
		rest = rest[30+n+m:]
	}
	return events, nil
}

// decodeClickRecord reads a single click's record (clickRecordTag); its
// id, code and data are copied into a.
func decodeClickRecord(seq int64, v []byte, a *eventArena) (link.Event, error) {
	if len(v) < 1+16+8+2 {
		return link.Event{}, fmt.Errorf("event %d: a click record of %d bytes", seq, len(v))
	}
	n := int(binary.BigEndian.Uint16(v[25:27]))
	if len(v) < 27+n {
		return link.Event{}, fmt.Errorf("event %d: a click record cut short", seq)
	}
	id, code := a.text(v[1:17], v[27:27+n])
	return link.Event{Cursor: link.EventCursor{Seq: seq}, ID: id, Type: clicks.EventType,
		At: link.FromMicros(int64(binary.BigEndian.Uint64(v[17:25]))), Code: code, Data: a.bytes(v[27+n:])}, nil
}
