package store

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
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
// one Put per hundreds of clicks instead of one per click, and one Delete
// when pruned. (Not more: bbolt keeps at least two records a node, so
// each transaction rewrites the last record before its own; a node of
// more than a page is a new buffer at each commit; and a reader resuming
// inside a record walks it from its start.)
//
// A record of clicks starts with clickRecordsTag, then its count (4
// bytes), its oldest and newest click times (Unix µs, 8 bytes each) and
// the random half of its clicks' ids (8 bytes, drawn once per
// transaction: a click's id is that and its number). Each click then
// says what changed since the click before it in the record (all of it
// for the first): a byte of clickNew* flags; its time (Unix ns) as the
// difference from the time before (the first's from 0), a varint, unless
// clickNoTime; then, as the flags say, its code (a uvarint length and
// bytes), its fields (appendClickFields, its visitor left out) and its
// visitor (8 bytes). Integers are big-endian. Clicks on one link from
// visitors alike cost a few bytes each: the sink's transaction and every
// commit after it write that much less.
const (
	clickRecordsTag    = 0x03
	clickRecordsHeader = 1 + 4 + 8 + 8 + 8
	maxRecordClicks    = 256
	// maxRecordBytes closes a record once it is this long: two records
	// and their keys fit one 4 KiB page, whose buffer bbolt reuses at each
	// commit (a node of several pages is a new allocation each time).
	maxRecordBytes = 1800
)

// What a click of a record of clicks holds besides its time.
const (
	clickNewCode    = 1 << iota // its code
	clickNewFields              // its fields
	clickNewVisitor             // its visitor
	clickNoTime                 // no time: a zero time, no difference written
)

// recordBuffers keeps the buffers a write transaction's values are built
// in (click records; compressed message bodies, bodyPacker) between
// transactions: a value's bytes are bbolt's until its transaction ends,
// so a buffer goes back only after that.
var recordBuffers = sync.Pool{New: func() any { return new(recordBuffer) }}

type recordBuffer struct {
	arena []byte // the records
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
	buf.keys = buf.keys[:0]
	w := clickRecordWriter{b: b, buf: buf, arena: buf.arena[:0]}
	_, _ = rand.Read(w.ids[:])
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
	ids            [8]byte // the random half of the clicks' ids
	start          int     // the open record's first byte
	count          int     // its clicks
	oldest, newest int64
	prev           clicks.Click // its last click
	prevNs         int64        // the last time written, Unix ns
}

func (w *clickRecordWriter) add(c clicks.Click) error {
	if w.count == 0 {
		w.start = len(w.arena)
		w.arena = append(w.arena, make([]byte, clickRecordsHeader)...)
		w.prevNs = 0
	}
	at := link.ToMicros(c.At)
	if w.count == 0 || at < w.oldest {
		w.oldest = at
	}
	if w.count == 0 || at > w.newest {
		w.newest = at
	}
	w.arena = w.appendClick(w.arena, c)
	w.prev = c
	w.count++
	if w.count == maxRecordClicks || len(w.arena)-w.start >= maxRecordBytes {
		return w.flush()
	}
	return nil
}

// appendClick appends c as the record's next click: what changed since
// the one before.
func (w *clickRecordWriter) appendClick(b []byte, c clicks.Click) []byte {
	first := w.count == 0
	flags := byte(0)
	if first || c.Code != w.prev.Code {
		flags |= clickNewCode
	}
	if first || !c.SameFields(w.prev) {
		flags |= clickNewFields
	}
	if first || c.Visitor != w.prev.Visitor {
		flags |= clickNewVisitor
	}
	if c.At.IsZero() {
		flags |= clickNoTime
	}
	b = append(b, flags)
	if !c.At.IsZero() {
		ns := c.At.UnixNano()
		b = binary.AppendVarint(b, ns-w.prevNs) // wraps as the reader's sum does
		w.prevNs = ns
	}
	if flags&clickNewCode != 0 {
		b = binary.AppendUvarint(b, uint64(len(c.Code)))
		b = append(b, c.Code...)
	}
	if flags&clickNewFields != 0 {
		f := c
		f.Visitor = 0
		b = appendClickFields(b, clicks.NewClickEvent(f))
	}
	if flags&clickNewVisitor != 0 {
		b = binary.BigEndian.AppendUint64(b, c.Visitor)
	}
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

// readClickFields reads what appendClickFields wrote at the start of
// fields into e, and returns what follows. Its strings share fields'
// memory (no copy): e lives only while that does.
func readClickFields(fields []byte, e *clicks.ClickEvent) ([]byte, error) {
	if len(fields) < 1 {
		return nil, errClickRecords
	}
	e.Bot = fields[0] == 1
	rest := fields[1:]
	for _, f := range [...]*string{&e.Referrer, &e.Country, &e.Region, &e.City, &e.Device, &e.OS, &e.Browser, &e.Source, &e.Rule, &e.Variant, &e.Visitor} {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return nil, errClickRecords
		}
		*f = unsafe.String(unsafe.SliceData(rest[w:]), int(n))
		rest = rest[w+int(n):]
	}
	return rest, nil
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
	copy(h[21:], w.ids[:])
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

// isClickRecords reports whether v is a record of clicks (of either
// format, clickRecordsTag or legacyRecordsTag; both start with the same
// count and times).
func isClickRecords(v []byte) bool {
	return len(v) >= clickRecordsHeader && v[0] == clickRecordsTag || len(v) >= legacyRecordsHeader && v[0] == legacyRecordsTag
}

// recordEvents is how many events a record holds: a record of clicks its
// count, another one (a record that is no record of clicks reads as one
// event, which then fails to decode).
func recordEvents(v []byte) int64 {
	if isClickRecords(v) {
		return int64(max(binary.BigEndian.Uint32(v[1:5]), 1))
	}
	return 1
}

// recordTimes is a record of clicks' oldest and newest click times (µs).
func recordTimes(v []byte) (oldest, newest int64) {
	return int64(binary.BigEndian.Uint64(v[5:13])), int64(binary.BigEndian.Uint64(v[13:21]))
}

var errClickRecords = errors.New("a record of clicks cut short")
