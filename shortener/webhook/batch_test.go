package webhook

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// page makes a page of events: "c" a click, "l" a link.created, "x" an
// event Render leaves out; each at its own cursor, at the given times.
func page(kinds string, at func(i int) time.Time) ([]link.EventCursor, []Rendered) {
	var evs []link.EventCursor
	var rs []Rendered
	for i, k := range kinds {
		evs = append(evs, link.EventCursor{Tx: 1, Seq: int64(i + 1)})
		r := Rendered{At: at(i), Code: "abc", Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		switch k {
		case 'c':
			r.Type = TypeClick
		case 'l':
			r.Type = TypeLinkCreated
		}
		rs = append(rs, r)
	}
	return evs, rs
}

// TestMessagesFor: wanted events become messages, others only move the
// cursor; clicks gather into batches of Batch, the last one sent once
// BatchWait has passed since its first click, else left (with what
// follows it) for the next page.
func TestMessagesFor(t *testing.T) {
	now := time.Now()
	old := func(int) time.Time { return now.Add(-time.Hour) }
	recent := func(int) time.Time { return now }
	all := Endpoint{Types: []string{TypeClick, TypeLinkCreated}}
	batched := all
	batched.Batch, batched.BatchWait = 3, time.Minute
	from := link.EventCursor{Tx: 1}
	for _, tc := range []struct {
		name   string
		e      Endpoint
		kinds  string
		at     func(int) time.Time
		want   []string // per message: type and events
		cursor int64
	}{
		{"one per event", all, "clxc", old, []string{"click 1", "link.created 1", "click 1"}, 4},
		{"unwanted types", Endpoint{Types: []string{TypeLinkCreated}}, "cclc", old, []string{"link.created 1"}, 4},
		{"batches of 3", batched, "ccccccc", old, []string{"click.batch 3", "click.batch 3", "click.batch 1"}, 7},
		{"a filling batch waits", batched, "lccccl", recent, []string{"link.created 1", "click.batch 3"}, 4},
		{"a filling batch waits from its start", batched, "lclc", recent, []string{"link.created 1"}, 1},
		{"a batch filled across a link event", batched, "lcclc", recent, []string{"link.created 1", "link.created 1", "click.batch 3"}, 5},
		{"nothing wanted", Endpoint{Types: []string{TypeLinkRevoked}}, "clc", old, nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, rs := page(tc.kinds, tc.at)
			msgs, cur := messagesFor(tc.e, evs, rs, from, now)
			var got []string
			for _, m := range msgs {
				got = append(got, fmt.Sprintf("%s %d", m.Type, m.Events))
				if !ValidID(m.ID) || !m.NextAt.Equal(now) || !json.Valid(m.Body) {
					t.Errorf("message %+v", m)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || cur.Seq != tc.cursor {
				t.Errorf("messages %v, cursor %d; want %v, %d", got, cur.Seq, tc.want, tc.cursor)
			}
		})
	}
}

// TestBatchBody: a batch's body carries each click's data in order under
// the first click's time.
func TestBatchBody(t *testing.T) {
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	b := BatchBody([]Rendered{{At: at, Data: json.RawMessage(`{"code":"a"}`)}, {At: at.Add(time.Second), Data: json.RawMessage(`{"code":"b"}`)}})
	want := `{"type":"click.batch","timestamp":"2026-12-06T08:00:00Z","data":{"clicks":[{"code":"a"},{"code":"b"}]}}`
	if string(b) != want {
		t.Errorf("%s\nwant %s", b, want)
	}
}

// TestBatcherCopies: a batch's body is BatchBody of its clicks, made from
// copies: the memory each click's data was read into may be reused once
// it is added (as the outbox's next page is read into it).
func TestBatcherCopies(t *testing.T) {
	now := time.Now()
	e := Endpoint{Types: []string{TypeClick}, Batch: 3}
	evs, rs := page("ccccc", func(int) time.Time { return now.Add(-time.Hour) })
	var want [][]byte
	for _, r := range [][]Rendered{rs[:3], rs[3:]} {
		want = append(want, BatchBody(r))
	}
	b := newBatcher(e, link.EventCursor{}, now)
	scratch := make([]byte, 0, 64)
	for i, r := range rs {
		scratch = append(scratch[:0], r.Data...)
		r.Data = scratch
		b.add(evs[i], r)
		copy(scratch, "{{{{{{{{{{") // the next read overwrites it
	}
	msgs, cur := b.done()
	if len(msgs) != 2 || cur != evs[4] {
		t.Fatalf("%d messages, cursor %v", len(msgs), cur)
	}
	for i, m := range msgs {
		if string(m.Body) != string(want[i]) {
			t.Errorf("message %d: %s\nwant %s", i, m.Body, want[i])
		}
	}
}

// TestSentBodies: the memory of bodies sent is kept across garbage
// collections (a sync.Pool's would not be), up to maxFreeBodies; bodies
// too large are not kept.
func TestSentBodies(t *testing.T) {
	for newBody() != nil { // what other tests left
	}
	for range 2 * maxFreeBodies / (30 << 10) {
		releaseBody(make([]byte, 30<<10))
	}
	releaseBody(make([]byte, maxPooledBody+1))
	runtime.GC()
	runtime.GC()
	if bodies.bytes > maxFreeBodies || len(bodies.free) != maxFreeBodies/(30<<10) {
		t.Fatalf("kept %d bodies, %d bytes", len(bodies.free), bodies.bytes)
	}
	if b := BodyBuffer(25 << 10); len(b) != 25<<10 || cap(b) != 30<<10 {
		t.Errorf("BodyBuffer: %d/%d bytes, want a kept body's memory", len(b), cap(b))
	}
	if b := emptyBody(64 << 10); len(b) != 0 || cap(b) < 64<<10 {
		t.Errorf("asked for 64 KiB, got %d/%d", len(b), cap(b))
	}
	msgs := []Message{{Body: make([]byte, 10, 100)}}
	if releaseBodies(msgs); msgs[0].Body != nil {
		t.Error("a released message keeps its body")
	}
	for newBody() != nil {
	}
	if bodies.bytes != 0 {
		t.Errorf("%d bytes counted with none kept", bodies.bytes)
	}
}
