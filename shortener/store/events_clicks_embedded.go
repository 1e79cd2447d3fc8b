package store

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Click events in the embedded outbox. Every event has a number (its
// cursor's Seq), the events bucket's sequence is the last number given,
// and a record's key is the number of its first event. A link event is a
// record of its own (JSON); the clicks a sink transaction counts are
// stored together, up to maxRecordClicks a record (or maxRecordBytes):
// one Put per dozen clicks instead of one per click, and one Delete when
// pruned. (Not more: bbolt keeps at least two records a node, so each
// transaction rewrites the last record before its own; a node of more
// than a page is a new buffer at each commit; and a reader resuming
// inside a record walks it from its start.)
//
// A record of clicks starts with clickRecordsTag, then its count (4
// bytes), its oldest and newest click times (Unix µs, 8 bytes each), then
// each click: its id's 16 bytes, its time (Unix ns, 8), its code's length
// (2) and code, its fields' length (4) and fields (appendClickFields).
// Integers are big-endian.
const (
	clickRecordsTag    = 0x02
	clickRecordsHeader = 1 + 4 + 8 + 8
	maxRecordClicks    = 64
	// maxRecordBytes closes a record once it is this long: two records
	// and their keys fit one 4 KiB page, whose buffer bbolt reuses at each
	// commit (a node of several pages is a new allocation each time).
	maxRecordBytes = 1800
)

// clickRecordTag starts a single click's record, as written before click
// records held many clicks (kept readable for outboxes written then):
// after the tag, the id's 16 bytes, the time (8), the code's length (2)
// and the code, then the ClickEvent's JSON.
const clickRecordTag = 0x01

// recordBuffers keeps the buffers a write transaction's values are built
// in (click records; compressed message bodies, bodyPacker) between
// transactions: a value's bytes are bbolt's until its transaction ends,
// so a buffer goes back only after that.
var recordBuffers = sync.Pool{New: func() any { return new(recordBuffer) }}

type recordBuffer struct {
	arena []byte // the records
	ids   []byte // their clicks' random ids
	keys  []byte
}

// maxPooledRecords: a buffer larger than this (a burst) is left to the
// garbage collector rather than kept.
const maxPooledRecords = 8 << 20

func getRecordBuffer() *recordBuffer { return recordBuffers.Get().(*recordBuffer) }

func putRecordBuffer(b *recordBuffer) {
	if cap(b.arena) <= maxPooledRecords {
		recordBuffers.Put(b)
	}
}

// recordClickEvents appends a click event for every click of the batches,
// in the transaction that counts them, when on; buf must stay untouched
// until tx ends.
func recordClickEvents(tx *bolt.Tx, on bool, batches []clicks.Batch, buf *recordBuffer) error {
	if !on {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(embeddedEvents)
	if err != nil {
		return err
	}
	b.FillPercent = appendFill
	n := 0
	for _, batch := range batches {
		n += len(batch.Clicks)
	}
	if n == 0 {
		return nil
	}
	// The ids' random bytes in one read of the system's random source,
	// not one per click.
	buf.ids = append(buf.ids[:0], make([]byte, 16*n)...)
	_, _ = rand.Read(buf.ids)
	buf.keys = buf.keys[:0]
	w := clickRecordWriter{b: b, buf: buf, arena: buf.arena[:0]}
	for _, batch := range batches {
		for _, c := range batch.Clicks {
			if err := w.add(c); err != nil {
				return err
			}
		}
	}
	err = w.flush()
	buf.arena = w.arena
	return err
}

// clickRecordWriter builds the records of one transaction in one buffer,
// each Put given its own part: appending never rewrites a part already
// given (a growth moves on to a new array).
type clickRecordWriter struct {
	b              *bolt.Bucket
	buf            *recordBuffer
	arena          []byte
	start          int // the open record's first byte
	count          int // its clicks
	clicks         int // the transaction's so far
	oldest, newest int64
}

func (w *clickRecordWriter) add(c clicks.Click) error {
	if w.count == 0 {
		w.start = len(w.arena)
		w.arena = append(w.arena, make([]byte, clickRecordsHeader)...)
	}
	at := link.ToMicros(c.At)
	if w.count == 0 || at < w.oldest {
		w.oldest = at
	}
	if w.count == 0 || at > w.newest {
		w.newest = at
	}
	w.arena = appendRecordedClick(w.arena, c, w.buf.ids[16*w.clicks:16*w.clicks+16])
	w.count++
	w.clicks++
	if w.count == maxRecordClicks || len(w.arena)-w.start >= maxRecordBytes {
		return w.flush()
	}
	return nil
}

// appendRecordedClick appends one click of a record, its id the 16 bytes
// of id.
func appendRecordedClick(b []byte, c clicks.Click, id []byte) []byte {
	b = append(b, id...)
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(c.At)))
	code := c.Code[:min(len(c.Code), 0xffff)]
	b = binary.BigEndian.AppendUint16(b, uint16(len(code)))
	b = append(b, code...)
	lenAt := len(b)
	b = append(b, 0, 0, 0, 0)
	b = appendClickFields(b, clicks.NewClickEvent(c))
	binary.BigEndian.PutUint32(b[lenAt:], uint32(len(b)-lenAt-4))
	return b
}

// unixNano is t in Unix nanoseconds, noTime for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return noTime
	}
	return t.UnixNano()
}

const noTime = math.MinInt64

func fromUnixNano(ns int64) time.Time {
	if ns == noTime {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// appendClickFields appends what a click's event says besides its code
// and time: bot (one byte), then referrer, country, region, city, device,
// os, browser, source, rule, variant and visitor, each its length (a
// uvarint) and bytes. A fraction of the event's JSON, which is rendered
// when the outbox is read: the click sink's transaction writes less.
func appendClickFields(b []byte, e clicks.ClickEvent) []byte {
	bot := byte(0)
	if e.Bot {
		bot = 1
	}
	b = append(b, bot)
	for _, f := range [...]string{e.Referrer, e.Country, e.Region, e.City, e.Device, e.OS, e.Browser, e.Source, e.Rule, e.Variant, e.Visitor} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// readClickFields reads what appendClickFields wrote into e. Its strings
// share fields' memory (no copy): e lives only while that does.
func readClickFields(fields []byte, e *clicks.ClickEvent) error {
	if len(fields) < 1 {
		return errClickRecords
	}
	e.Bot = fields[0] == 1
	rest := fields[1:]
	for _, f := range [...]*string{&e.Referrer, &e.Country, &e.Region, &e.City, &e.Device, &e.OS, &e.Browser, &e.Source, &e.Rule, &e.Variant, &e.Visitor} {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return errClickRecords
		}
		*f = unsafe.String(unsafe.SliceData(rest[w:]), int(n))
		rest = rest[w+int(n):]
	}
	return nil
}

// flush puts the open record, numbered after the bucket's last event.
func (w *clickRecordWriter) flush() error {
	if w.count == 0 {
		return nil
	}
	h := w.arena[w.start : w.start+clickRecordsHeader]
	h[0] = clickRecordsTag
	binary.BigEndian.PutUint32(h[1:], uint32(w.count))
	binary.BigEndian.PutUint64(h[5:], uint64(w.oldest))
	binary.BigEndian.PutUint64(h[13:], uint64(w.newest))
	first := w.b.Sequence() + 1
	// Keys in one buffer too; a growth moves on to a new array, leaving
	// the keys already given where they are.
	at := len(w.buf.keys)
	w.buf.keys = binary.BigEndian.AppendUint64(w.buf.keys, first)
	k := w.buf.keys[at : at+8 : at+8]
	v := w.arena[w.start:len(w.arena):len(w.arena)]
	count := w.count
	w.count = 0
	if err := w.b.Put(k, v); err != nil {
		return err
	}
	return w.b.SetSequence(first + uint64(count) - 1)
}

// recordEvents is how many events a record holds: a record of clicks its
// count, another one (a record that is no record of clicks reads as one
// event, which then fails to decode).
func recordEvents(v []byte) int64 {
	if len(v) >= clickRecordsHeader && v[0] == clickRecordsTag {
		return int64(max(binary.BigEndian.Uint32(v[1:5]), 1))
	}
	return 1
}

// recordTimes is a record of clicks' oldest and newest click times (µs).
func recordTimes(v []byte) (oldest, newest int64) {
	return int64(binary.BigEndian.Uint64(v[5:13])), int64(binary.BigEndian.Uint64(v[13:21]))
}

var errClickRecords = errors.New("a record of clicks cut short")

// readRecordedClicks appends to events the clicks of the record numbered
// first (v), from its skip-th on, while fewer than limit, their data the
// ClickEvent's JSON; copies go to a (the bucket's memory lives as long as
// its transaction).
func readRecordedClicks(events []link.Event, first int64, v []byte, skip, limit int, a *eventArena) ([]link.Event, error) {
	count := int(recordEvents(v))
	rest := v[clickRecordsHeader:]
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
			if err := readClickFields(rest[30+n:30+n+m], &e); err != nil {
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
