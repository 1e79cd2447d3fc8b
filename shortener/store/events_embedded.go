package store

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// embeddedEvents is the outbox: its records by their first event's
// number (8 bytes big-endian), a link event's an embeddedEvent, clicks'
// as events_clicks_embedded.go says; the bucket's sequence is the last
// event's number. bbolt commits one write transaction at a time, so
// events become visible in number order.
var embeddedEvents = []byte("events")

// embeddedEvent is an event as stored: Link is a link event's record as
// the change wrote it, Data another event's data.
type embeddedEvent struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	At   int64           `json:"at"` // Unix microseconds
	Code string          `json:"code"`
	Link json.RawMessage `json:"link,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// appendFill is how full bbolt fills the pages of a bucket whose keys only
// grow (the outbox, message bodies): a split at the default half leaves
// every page behind it half empty forever, and makes twice the pages to
// write at each commit.
const appendFill = 0.95

// recordEvent appends an event of type typ for the link code, whose
// record the change wrote as rec, in the change's transaction tx, when
// events are on.
func recordEvent(tx *bolt.Tx, on bool, typ, code string, rec []byte) error {
	if !on {
		return nil
	}
	return recordEventAt(tx, typ, code, rec, link.ToMicros(time.Now()))
}

// recordEventAt appends a link event that happened at (Unix µs).
func recordEventAt(tx *bolt.Tx, typ, code string, rec []byte, at int64) error {
	return appendEvent(tx, embeddedEvent{ID: newEventID(), Type: typ, At: at, Code: code, Link: rec})
}

// appendEvent appends e to the outbox in tx.
func appendEvent(tx *bolt.Tx, e embeddedEvent) error {
	b, err := tx.CreateBucketIfNotExists(embeddedEvents)
	if err != nil {
		return err
	}
	b.FillPercent = appendFill
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	v, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return b.Put(seqKey(int64(seq)), v)
}

// RecordEvents implements link.EventRecorder: the events, in one commit.
func (s *EmbeddedStore) RecordEvents(ctx context.Context, events []link.Event) error {
	if err := checkRecorded(ctx, events); err != nil {
		return err
	}
	return s.Db.Update(func(tx *bolt.Tx) error {
		for _, e := range events {
			if err := appendEvent(tx, embeddedEvent{ID: e.ID, Type: e.Type, At: link.ToMicros(e.At), Data: e.Data}); err != nil {
				return fmt.Errorf("recording events: %w", err)
			}
		}
		return nil
	})
}

// eventArena holds a page's click events' data (their JSON) in a few
// large allocations rather than one per event (a busy outbox reads
// thousands of clicks a second), or in a caller's scratch memory: each
// new chunk twice the last, so that the last, given back to the caller,
// holds a whole page the next time.
type eventArena struct {
	data []byte
}

const arenaChunk = 32 << 10

// grow makes room for n more bytes: a new chunk when the one in use is
// full.
func (a *eventArena) grow(n int) {
	if cap(a.data)-len(a.data) < n {
		a.data = make([]byte, 0, max(arenaChunk, 2*cap(a.data), n))
	}
}

// text returns "evt_" and the hex of id, and code, as strings sharing one
// allocation (one copy per event, not three).
func (a *eventArena) text(id, code []byte) (string, string) {
	var buf [128]byte
	b := append(buf[:0], "evt_"...)
	b = hex.AppendEncode(b, id)
	mid := len(b)
	s := string(append(b, code...))
	return s[:mid], s[mid:]
}

// json returns e's JSON, sharing its chunk with the others.
func (a *eventArena) json(e clicks.ClickEvent) []byte {
	a.grow(1024)
	start := len(a.data)
	a.data = e.AppendJSON(a.data)
	return a.data[start:len(a.data):len(a.data)]
}

// bytes returns a copy of b sharing its chunk with the others.
func (a *eventArena) bytes(b []byte) []byte {
	a.grow(len(b))
	start := len(a.data)
	a.data = append(a.data, b...)
	return a.data[start:len(a.data):len(a.data)]
}

// newEventID is "evt_" and 32 random hex digits, as PostgreSQL's
// shortener_events ids.
func newEventID() string { return "evt_" + hex.EncodeToString(newEventIDBytes()) }

// newEventIDBytes is an event id's 16 random bytes.
func newEventIDBytes() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}

// EventsAfter implements link.EventLog: the events numbered after the
// cursor's Seq (Tx is always 0 here).
func (s *EmbeddedStore) EventsAfter(ctx context.Context, after link.EventCursor, limit int) ([]link.Event, link.EventCursor, error) {
	events, _, after, err := s.AppendEventsAfter(ctx, nil, nil, after, limit)
	return events, after, err
}

// AppendEventsAfter implements link.EventAppender.
func (s *EmbeddedStore) AppendEventsAfter(ctx context.Context, dst []link.Event, scratch []byte, after link.EventCursor, limit int) ([]link.Event, []byte, link.EventCursor, error) {
	if err := ctx.Err(); err != nil {
		return dst, scratch, after, err
	}
	limit = min(max(limit, 1), maxEventPage)
	events, base := dst, len(dst)
	a := eventArena{data: scratch}
	err := s.Db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(embeddedEvents)
		if b == nil {
			return nil
		}
		// Sized once: a busy outbox fills every page.
		events = slices.Grow(events, int(max(0, min(int64(limit), int64(b.Sequence())-after.Seq))))
		limit += base
		c := b.Cursor()
		k, v, skip := seekEvent(c, after.Seq+1)
		for ; k != nil && len(events) < limit; k, v = c.Next() {
			var err error
			if events, err = appendRecord(events, k, v, skip, limit, &a); err != nil {
				return err
			}
			skip = 0
		}
		return nil
	})
	if err != nil {
		return dst, scratch, after, fmt.Errorf("reading link events: %w", err)
	}
	if len(events) > base {
		after = events[len(events)-1].Cursor
	}
	return events, a.data, after, nil
}

// seekEvent places c on the record holding event n (or, when n is gone,
// the first after it) and says how many of its events come before n.
func seekEvent(c *bolt.Cursor, n int64) (k, v []byte, skip int) {
	k, v = c.Seek(seqKey(n))
	if k != nil && keySeq(k) == n {
		return k, v, 0
	}
	// n may be inside the record before.
	var pk, pv []byte
	if k == nil {
		pk, pv = c.Last()
	} else {
		pk, pv = c.Prev()
	}
	if pk != nil && keySeq(pk) < n && n < keySeq(pk)+recordEvents(pv) {
		return pk, pv, int(n - keySeq(pk))
	}
	k, v = c.Seek(seqKey(n))
	return k, v, 0
}

func keySeq(k []byte) int64 { return int64(binary.BigEndian.Uint64(k)) }

// appendRecord appends the events of the record k, v from its skip-th on,
// while fewer than limit.
func appendRecord(events []link.Event, k, v []byte, skip, limit int, a *eventArena) ([]link.Event, error) {
	switch {
	case !isClickRecords(v):
	case v[0] == clickRecordsTag:
		return readClickRecords(events, keySeq(k), v, skip, limit, a)
	default:
		return readRecordedClicks(events, keySeq(k), v, skip, limit, a)
	}
	e, err := decodeEvent(k, v, a)
	if err != nil {
		return events, err
	}
	return append(events, e), nil
}

// EventsEnd implements link.EventLog: the events bucket's last number.
func (s *EmbeddedStore) EventsEnd(ctx context.Context) (link.EventCursor, error) {
	var c link.EventCursor
	if err := ctx.Err(); err != nil {
		return c, err
	}
	err := s.Db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(embeddedEvents); b != nil {
			c.Seq = int64(b.Sequence())
		}
		return nil
	})
	return c, err
}

func decodeEvent(k, v []byte, a *eventArena) (link.Event, error) {
	if len(v) > 0 && v[0] == clickRecordTag {
		return decodeClickRecord(int64(binary.BigEndian.Uint64(k)), v, a)
	}
	var ee embeddedEvent
	if err := json.Unmarshal(v, &ee); err != nil {
		return link.Event{}, err
	}
	e := link.Event{Cursor: link.EventCursor{Seq: int64(binary.BigEndian.Uint64(k))}, ID: ee.ID, Type: ee.Type,
		At: link.FromMicros(ee.At), Code: ee.Code, Data: ee.Data}
	if ee.Link != nil {
		var rec embeddedRecord
		if err := json.Unmarshal(ee.Link, &rec); err != nil {
			return link.Event{}, fmt.Errorf("event %s: %w", ee.ID, err)
		}
		e.Link = rec.link(ee.Code)
	}
	return e, nil
}

var (
	_ link.EventLog      = (*EmbeddedStore)(nil)
	_ link.EventAppender = (*EmbeddedStore)(nil)
	_ link.EventRecorder = (*EmbeddedStore)(nil)
)
