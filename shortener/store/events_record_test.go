package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// appendClickRecord writes a single click's record, as the click sink did
// before records held many clicks (outboxes written then still hold them).
func appendClickRecord(b []byte, c clicks.Click, id []byte) []byte {
	b = append(b, clickRecordTag)
	b = append(b, id...)
	b = binary.BigEndian.AppendUint64(b, uint64(link.ToMicros(c.At)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.Code)))
	b = append(b, c.Code...)
	return clicks.NewClickEvent(c).AppendJSON(b)
}

// putLegacyRecord puts cs as one record of clicks as written before
// records said what changed from click to click (legacyRecordsTag).
func putLegacyRecord(tx *bolt.Tx, cs []clicks.Click) error {
	b, err := tx.CreateBucketIfNotExists(embeddedEvents)
	if err != nil {
		return err
	}
	v := append([]byte{legacyRecordsTag}, make([]byte, legacyRecordsHeader-1)...)
	binary.BigEndian.PutUint32(v[1:], uint32(len(cs)))
	binary.BigEndian.PutUint64(v[5:], uint64(link.ToMicros(cs[0].At)))
	binary.BigEndian.PutUint64(v[13:], uint64(link.ToMicros(cs[len(cs)-1].At)))
	for _, c := range cs {
		v = append(v, newEventIDBytes()...)
		v = binary.BigEndian.AppendUint64(v, uint64(unixNano(c.At)))
		v = binary.BigEndian.AppendUint16(v, uint16(len(c.Code)))
		v = append(v, c.Code...)
		fields := appendClickFields(nil, clicks.NewClickEvent(c))
		v = append(binary.BigEndian.AppendUint32(v, uint32(len(fields))), fields...)
	}
	first := b.Sequence() + 1
	if err := b.Put(seqKey(int64(first)), v); err != nil {
		return err
	}
	return b.SetSequence(first + uint64(len(cs)) - 1)
}

// FuzzClickRecord: a single click's record (the format before records of
// many clicks) reads back as written, and any bytes after the tag read as
// an event or an error, never a panic.
func FuzzClickRecord(f *testing.F) {
	f.Add("abc1234", int64(1796543043123456), []byte{clickRecordTag, 1, 2})
	f.Add("", int64(0), []byte{clickRecordTag})
	f.Fuzz(func(t *testing.T, code string, at int64, junk []byte) {
		code = code[:min(len(code), 0xffff)]
		c := clicks.Click{Code: code, At: time.UnixMicro(at), Class: clicks.ClassBrowser}
		rec := appendClickRecord(nil, c, newEventIDBytes())
		e, err := decodeClickRecord(7, rec, new(eventArena))
		want := clicks.NewClickEvent(c).AppendJSON(nil)
		if err != nil || e.Code != code || link.ToMicros(e.At) != link.ToMicros(c.At) || string(e.Data) != string(want) ||
			len(e.ID) != 36 || !json.Valid(e.Data) {
			t.Fatalf("read back %+v, %v", e, err)
		}
		_, _ = decodeClickRecord(7, append([]byte{clickRecordTag}, junk...), new(eventArena))
	})
}

// openOutbox is an embedded store of a fresh file, its outbox on.
func openOutbox(t testing.TB) *EmbeddedStore {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "outbox.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return &EmbeddedStore{Db: db}
}

// recordSink records the clicks as the click sink's transaction does.
func recordSink(t testing.TB, s *EmbeddedStore, cs []clicks.Click) {
	t.Helper()
	buf := getRecordBuffer()
	defer putRecordBuffer(buf)
	if err := s.Db.Update(func(tx *bolt.Tx) error {
		return recordClickEvents(tx, true, []clicks.Batch{{Clicks: cs}}, buf)
	}); err != nil {
		t.Fatal(err)
	}
}

// FuzzClickRecords: the clicks of a sink transaction read back from the
// outbox as written, numbered on from its end; and a record of clicks of
// any bytes reads as events or an error, never a panic, never more events
// than it says.
func FuzzClickRecords(f *testing.F) {
	f.Add("abc\nxyz", uint16(3), int64(1796543043123456), []byte{0, 0, 0, 2, 1})
	f.Add("DE\nBY\nMünchen\nmobile\nAndroid\nChrome\nexample.com\nr1\nb\n\x00\"<", uint16(40), int64(1796543043123456), []byte{})
	f.Add("", uint16(0), int64(-1), []byte{})
	f.Add("q", uint16(5000), int64(0), []byte{255, 255, 255, 255})
	s := openOutbox(f)
	f.Fuzz(func(t *testing.T, codes string, n uint16, at int64, junk []byte) {
		at %= 9e15 // µs within the years 1678-2262, where Unix ns are defined
		names := strings.Split(codes, "\n")
		cs := make([]clicks.Click, int(n)%(2*maxRecordClicks+10))
		for i := range cs {
			// Runs of clicks alike: codes change every other click, fields
			// every third, visitors every fifth.
			name := names[i/2%len(names)]
			field := func(k int) string { return names[(i/3+k)%len(names)] }
			cs[i] = clicks.Click{Code: name, At: time.UnixMicro(at + int64(i)), Class: clicks.UAClass(i / 3 % 3),
				Country: field(1), Region: field(2), City: field(3), Device: field(4), OS: field(5), Browser: field(6),
				Referrer: field(7), Rule: field(8), Variant: field(9), QR: i/3%2 == 0, Visitor: uint64(at) * uint64(i/5)}
			if i%7 == 6 {
				cs[i].At = time.Time{}
			}
		}
		end, err := s.EventsEnd(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		recordSink(t, s, cs)
		got := readAllEvents(t, s, end, 1000)
		if len(got) != len(cs) {
			t.Fatalf("%d clicks recorded, %d read", len(cs), len(got))
		}
		for i, e := range got {
			c := cs[i]
			if e.Cursor.Seq != end.Seq+int64(i)+1 || e.Code != c.Code || unixNano(e.At) != unixNano(c.At) || e.Type != clicks.EventType ||
				string(e.Data) != string(clicks.NewClickEvent(c).AppendJSON(nil)) || len(e.ID) != 36 {
				t.Fatalf("click %d read back as %+v", i, e)
			}
		}
		for _, tag := range []byte{clickRecordsTag, legacyRecordsTag} {
			rec := append([]byte{tag}, make([]byte, clickRecordsHeader-1)...)
			rec = append(rec, junk...)
			if len(junk) >= 4 {
				copy(rec[1:5], junk[:4])
			}
			var a eventArena
			evs, _ := appendRecord(nil, seqKey(1), rec, int(at&7), maxEventPage, &a)
			if int64(len(evs)) > recordEvents(rec) {
				t.Fatalf("%d events read from a record of %d", len(evs), recordEvents(rec))
			}
		}
	})
}

// readAllEvents reads the outbox after from, page events at a time.
func readAllEvents(t testing.TB, s *EmbeddedStore, from link.EventCursor, page int) []link.Event {
	t.Helper()
	var out []link.Event
	for {
		evs, next, err := s.EventsAfter(context.Background(), from, page)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, evs...)
		if len(evs) == 0 {
			return out
		}
		from = next
	}
}

// TestOutboxRecords: an outbox of link events, a single click's record
// (as written before records of many clicks) and records of many clicks
// reads, from any cursor and in pages of any size, every event after it
// once, in number order; its end, backlog and pruning count events, and
// pruning removes whole records only.
func TestOutboxRecords(t *testing.T) {
	s := openOutbox(t)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Db.Update(func(tx *bolt.Tx) error { return recordEventAt(tx, link.EventCreated, "first", nil, link.ToMicros(t0)) }))
	must(s.Db.Update(func(tx *bolt.Tx) error { // the format before
		b, err := tx.CreateBucketIfNotExists(embeddedEvents)
		if err != nil {
			return err
		}
		seq, _ := b.NextSequence()
		return b.Put(seqKey(int64(seq)), appendClickRecord(nil, clicks.Click{Code: "old", At: t0}, newEventIDBytes()))
	}))
	click := func(i int, at time.Time) clicks.Click {
		return clicks.Click{Code: fmt.Sprintf("c%d", i), At: at, Class: clicks.ClassBrowser}
	}
	big := make([]clicks.Click, 2*maxRecordClicks+100) // full records and a shorter one
	for i := range big {
		big[i] = click(i, t0.Add(time.Duration(i)*time.Microsecond))
	}
	recordSink(t, s, big)
	must(s.Db.Update(func(tx *bolt.Tx) error { return recordEventAt(tx, link.EventRevoked, "mid", nil, link.ToMicros(t0)) }))
	legacy := make([]clicks.Click, 70) // a record of clicks as written before this format
	for i := range legacy {
		legacy[i] = clicks.Click{Code: fmt.Sprintf("l%d", i), At: t0.Add(3*time.Minute + time.Duration(i)), Country: "FR", Visitor: uint64(i)}
	}
	must(s.Db.Update(func(tx *bolt.Tx) error { return putLegacyRecord(tx, legacy) }))
	recordSink(t, s, []clicks.Click{click(0, t0.Add(time.Minute)), click(1, t0.Add(2*time.Minute)), click(2, t0.Add(30*time.Second))})

	total := int64(2 + len(big) + 1 + len(legacy) + 3)
	end, err := s.EventsEnd(context.Background())
	if err != nil || end.Seq != total {
		t.Fatalf("end %+v, %v; want %d", end, err, total)
	}
	want := readAllEvents(t, s, link.EventCursor{}, maxEventPage)
	if int64(len(want)) != total || want[0].Code != "first" || want[1].Code != "old" || want[2].Code != "c0" || want[total-4-70].Code != "mid" ||
		want[total-4].Code != "l69" || string(want[total-73].Data) != string(clicks.NewClickEvent(legacy[0]).AppendJSON(nil)) {
		t.Fatalf("read %d events, want %d in order", len(want), total)
	}
	ids := map[string]bool{}
	for i, e := range want {
		if e.Cursor.Seq != int64(i)+1 || ids[e.ID] {
			t.Fatalf("event %d: cursor %+v, id %s (seen: %v)", i, e.Cursor, e.ID, ids[e.ID])
		}
		ids[e.ID] = true
	}
	starts := []int64{0, 1, 2, 3, maxRecordClicks, maxRecordClicks + 1, maxRecordClicks + 2, 2*maxRecordClicks + 1,
		2*maxRecordClicks + 2, total - 5, total - 4, total - 3, total - 1, total, total + 5}
	for range 40 {
		starts = append(starts, rand.Int64N(total+1))
	}
	for _, from := range starts {
		page := []int{1, 7, 500, maxEventPage}[rand.IntN(4)]
		got := readAllEvents(t, s, link.EventCursor{Seq: from}, page)
		if int64(len(got)) != max(0, total-from) {
			t.Fatalf("after %d in pages of %d: %d events, want %d", from, page, len(got), total-from)
		}
		for i, e := range got {
			if w := want[from+int64(i)]; e.Cursor != w.Cursor || e.ID != w.ID || e.Code != w.Code || string(e.Data) != string(w.Data) {
				t.Fatalf("after %d in pages of %d: event %d is %+v, want %+v", from, page, i, e, w)
			}
		}
	}
	outboxPrune(t, s, t0, total)
}

// outboxPrune: pruning at a time inside the first record of clicks keeps
// that record whole (its newest click is younger), and at a time after it
// removes it at once; the backlog counts what is left.
func outboxPrune(t *testing.T, s *EmbeddedStore, t0 time.Time, total int64) {
	prune := func(cut time.Time) {
		t.Helper()
		if err := s.Db.Update(func(tx *bolt.Tx) error { return pruneEvents(tx, link.ToMicros(cut)) }); err != nil {
			t.Fatal(err)
		}
	}
	backlog := func() (int64, time.Time) {
		t.Helper()
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		var n int64
		var oldest time.Time
		must(s.Db.Update(func(tx *bolt.Tx) error { // the buckets Backlog reads
			for _, b := range [][]byte{embeddedHookEndpoints, embeddedHookMessages, embeddedHookBodies, embeddedHookDue, embeddedHookAttempts} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			return nil
		}))
		b, err := s.Backlog(context.Background())
		must(err)
		n, oldest = b.Events, b.OldestEvent
		return n, oldest
	}
	if n, oldest := backlog(); n != total || !oldest.Equal(t0) {
		t.Fatalf("backlog %d events, oldest %v; want %d, %v", n, oldest, total, t0)
	}
	prune(t0.Add(time.Microsecond)) // the two first events go; the first record of clicks has younger ones
	if n, _ := backlog(); n != total-2 {
		t.Fatalf("after pruning the two oldest: %d events, want %d", n, total-2)
	}
	// The first record of clicks holds the first k, its newest at k-1 µs.
	k := firstRecordEvents(t, s)
	if k < 2 || k > maxRecordClicks {
		t.Fatalf("the first record holds %d clicks", k)
	}
	prune(t0.Add(time.Duration(k) * time.Microsecond))
	if n, oldest := backlog(); n != total-2-k || !oldest.Equal(t0.Add(time.Duration(k)*time.Microsecond)) {
		t.Fatalf("after pruning a record: %d events, oldest %v; want %d", n, oldest, total-2-k)
	}
	if got := readAllEvents(t, s, link.EventCursor{Seq: 4}, 100); int64(len(got)) != total-2-k || got[0].Cursor.Seq != 2+k+1 {
		t.Fatalf("a cursor inside a pruned record reads %d events from %+v", len(got), got[0].Cursor)
	}
	prune(t0.Add(time.Hour))
	if n, _ := backlog(); n != 0 {
		t.Fatalf("after pruning all: %d events", n)
	}
}

// firstRecordEvents is how many events the outbox's first record holds.
func firstRecordEvents(t *testing.T, s *EmbeddedStore) int64 {
	var n int64
	if err := s.Db.View(func(tx *bolt.Tx) error {
		_, v := tx.Bucket(embeddedEvents).Cursor().First()
		n = recordEvents(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAppendEventsScratch: pages read into one reused slice and scratch
// buffer (as the webhook dispatcher reads) hold the events a fresh read
// does, each page's Data intact until the next read; the scratch grows to
// hold a page, then serves every page after with no new chunk.
func TestAppendEventsScratch(t *testing.T) {
	s := openOutbox(t)
	cs := make([]clicks.Click, 3000)
	for i := range cs {
		cs[i] = clicks.Click{Code: fmt.Sprintf("code%d", i%7), At: time.Now(), Class: clicks.ClassBrowser, Country: "DE",
			Device: "desktop", Referrer: "example.com", Visitor: uint64(i) + 1}
	}
	recordSink(t, s, cs[:1000])
	if err := s.Db.Update(func(tx *bolt.Tx) error {
		return recordEventAt(tx, link.EventCreated, "between", nil, link.ToMicros(time.Now()))
	}); err != nil {
		t.Fatal(err)
	}
	recordSink(t, s, cs[1000:])
	want := readAllEvents(t, s, link.EventCursor{}, 1000)
	var page []link.Event
	var scratch []byte
	got, caps := 0, map[int]bool{}
	for cur, i := (link.EventCursor{}), 0; ; i++ {
		var err error
		page, scratch, cur, err = s.AppendEventsAfter(context.Background(), page[:0], scratch[:0], cur, 500)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if w := want[got]; e.Cursor != w.Cursor || e.Code != w.Code || string(e.Data) != string(w.Data) {
				t.Fatalf("event %d: %+v, want %+v", got, e, w)
			}
			got++
		}
		if i > 0 {
			caps[cap(scratch)] = true
		}
	}
	if got != len(want) || got != 3001 {
		t.Errorf("read %d events, want %d", got, len(want))
	}
	if len(caps) != 1 {
		t.Errorf("the scratch changed after the first page: capacities %v", caps)
	}
}
