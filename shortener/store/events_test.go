package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// eventStore is a store with its outbox switched on or off.
type eventStore interface {
	link.Store
	link.EventLog
	link.LinkEditor
	link.TxStore
	link.ImportStore
	link.ServeCounter
}

func openEventStores(t *testing.T, on bool) map[string]eventStore {
	pg := openPostgres(t).(*store.PostgresStore)
	em := openEmbedded(t).(*store.EmbeddedStore)
	pg.Events, em.Events = on, on
	return map[string]eventStore{"postgres": pg, "embedded": em}
}

var eventID = regexp.MustCompile(`^evt_[0-9a-f]{32}$`)

// TestEventLog: with events on, each write path records exactly one
// event for a change, in its own statement or transaction, and none for
// a write that changes nothing or fails; EventsAfter pages through them
// in order. With events off, nothing is recorded.
func TestEventLog(t *testing.T) {
	for name, s := range openEventStores(t, true) {
		t.Run(name, func(t *testing.T) { eventPaths(t, s) })
	}
	for name, s := range openEventStores(t, false) {
		t.Run(name+"/off", func(t *testing.T) {
			ctx := context.Background()
			if err := s.Create(ctx, link.Link{Code: "quiet", LongURL: "https://example.com/"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Revoke(ctx, "quiet", time.Now()); err != nil {
				t.Fatal(err)
			}
			if evs := readEvents(t, s, 10); len(evs) != 0 {
				t.Errorf("events off, yet %d recorded", len(evs))
			}
		})
	}
}

func eventPaths(t *testing.T, s eventStore) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Create(ctx, link.Link{Code: "ev-a", LongURL: "https://example.com/a", Tags: []string{"x"}}))
	if err := s.Create(ctx, link.Link{Code: "ev-a", LongURL: "https://example.com/other"}); !errors.Is(err, link.ErrCodeTaken) {
		t.Fatalf("a taken code: %v", err)
	}
	_, _, err := s.CreateTx(ctx, nil, now, func(ctx context.Context, tx link.LinkTx) (link.IdemAnswer, error) {
		_, err := tx.Insert(ctx, []link.Link{{Code: "ev-b", LongURL: "https://example.com/b"}, {Code: "ev-a", LongURL: "https://example.com/a2"}})
		return link.IdemAnswer{Status: 201}, err
	})
	must(err)
	must(s.ImportTx(ctx, true, func(ctx context.Context, tx link.ImportTx) error {
		_, err := tx.Insert(ctx, []link.ImportLink{{Link: link.Link{Code: "ev-i", LongURL: "https://example.com/i", CreatedAt: now}}})
		return err
	}))
	setTitle := func(title string) link.Edit {
		return link.Edit{Apply: func(l *link.Link) error { l.Title = title; return nil }, At: now}
	}
	_, err = s.Edit(ctx, "ev-a", setTitle("Alpha"))
	must(err)
	_, err = s.Edit(ctx, "ev-a", setTitle("Alpha")) // no change, no event
	must(err)
	must(s.Revoke(ctx, "ev-b", now))
	must(s.Revoke(ctx, "ev-b", now.Add(time.Hour))) // revoked already
	if err := s.Revoke(ctx, "ev-none", now); !errors.Is(err, link.ErrNotFound) {
		t.Fatalf("revoking a missing link: %v", err)
	}
	must(s.Create(ctx, link.Link{Code: "ev-m", LongURL: "https://example.com/m", MaxClicks: 2}))
	for i, want := range []bool{true, true, false} {
		if _, ok, err := s.TakeServe(ctx, "ev-m"); err != nil || ok != want {
			t.Fatalf("serve %d: ok %v, %v", i, ok, err)
		}
	}
	want := []struct {
		typ, code string
		version   int64
	}{
		{link.EventCreated, "ev-a", 1}, {link.EventCreated, "ev-b", 1}, {link.EventCreated, "ev-i", 1},
		{link.EventUpdated, "ev-a", 2}, {link.EventRevoked, "ev-b", 2}, {link.EventCreated, "ev-m", 1},
		{link.EventMaxClicks, "ev-m", 1},
	}
	// Events become readable once every older transaction of the cluster
	// has ended (another package's tests may hold one open): poll.
	var evs []link.Event
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if evs = readEvents(t, s, 2); len(evs) >= len(want) || time.Now().After(deadline) {
			break
		}
	}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	ids := map[string]bool{}
	for i, e := range evs {
		w := want[i]
		if e.Type != w.typ || e.Link.Code != w.code || e.Code != w.code || e.Link.Version != w.version || !eventID.MatchString(e.ID) || ids[e.ID] {
			t.Errorf("event %d: %s %s v%d id %s; want %s %s v%d", i, e.Type, e.Link.Code, e.Link.Version, e.ID, w.typ, w.code, w.version)
		}
		ids[e.ID] = true
		if d := time.Since(e.At); d < 0 || d > time.Minute {
			t.Errorf("event %d at %v", i, e.At)
		}
	}
	if l := evs[0].Link; l.LongURL != "https://example.com/a" || len(l.Tags) != 1 || l.Tags[0] != "x" || l.CreatedAt.IsZero() {
		t.Errorf("created link as recorded: %+v", l)
	}
	if evs[3].Link.Title != "Alpha" || evs[4].Link.RevokedAt.IsZero() || !evs[4].Link.RevokedAt.Equal(now) {
		t.Errorf("updated %+v, revoked %+v", evs[3].Link, evs[4].Link)
	}
	if m := evs[6].Link; m.ClicksServed != 2 || m.MaxClicks != 2 {
		t.Errorf("used-up link as recorded: %+v", m)
	}
}

// readEvents reads the whole log, page by page.
func readEvents(t *testing.T, s link.EventLog, page int) []link.Event {
	t.Helper()
	var all []link.Event
	var cur link.EventCursor
	for {
		evs, next, err := s.EventsAfter(context.Background(), cur, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			if next != cur {
				t.Fatalf("an empty page moved the cursor from %v to %v", cur, next)
			}
			return all
		}
		for _, e := range evs {
			if !cur.Less(e.Cursor) {
				t.Fatalf("event %s at %v is not after %v", e.ID, e.Cursor, cur)
			}
			cur = e.Cursor
		}
		all = append(all, evs...)
	}
}

// TestEventLogLateCommit: a reader polling the log while a writer holds
// its transaction open after taking its event's number, and others
// commit events numbered after it, reads every event exactly once: the
// held one too, once it commits (PostgreSQL: events are read in
// transaction order, only below every running transaction; ordering by
// number alone skips it, as checked by breaking the query).
func TestEventLogLateCommit(t *testing.T) {
	for name, s := range openEventStores(t, true) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			hold, held := make(chan struct{}), make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // takes its event number, then waits before committing
				defer wg.Done()
				_, _, err := s.CreateTx(ctx, nil, time.Now(), func(ctx context.Context, tx link.LinkTx) (link.IdemAnswer, error) {
					_, err := tx.Insert(ctx, []link.Link{{Code: "late", LongURL: "https://example.com/late"}})
					close(held)
					<-hold
					return link.IdemAnswer{Status: 201}, err
				})
				if err != nil {
					t.Error(err)
				}
			}()
			<-held
			seen := map[string]int{}
			var cur link.EventCursor
			poll := func() {
				evs, next, err := s.EventsAfter(ctx, cur, 1000)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs {
					seen[e.Link.Code]++
				}
				cur = next
			}
			_, embedded := s.(*store.EmbeddedStore)
			for i := range 20 {
				if !embedded { // bbolt: the held transaction blocks other writers
					if err := s.Create(ctx, link.Link{Code: fmt.Sprintf("early-%d", i), LongURL: "https://example.com/e"}); err != nil {
						t.Fatal(err)
					}
				}
				poll()
			}
			close(hold)
			wg.Wait()
			// Until every event is read: a transaction writing elsewhere in
			// the cluster (other tests' databases) holds the xmin back too.
			want := 1
			if !embedded {
				want += 20
			}
			for deadline := time.Now().Add(30 * time.Second); len(seen) < want && time.Now().Before(deadline); {
				poll()
				time.Sleep(20 * time.Millisecond)
			}
			for i := range 20 {
				if !embedded && seen[fmt.Sprintf("early-%d", i)] != 1 {
					t.Errorf("early-%d read %d times", i, seen[fmt.Sprintf("early-%d", i)])
				}
			}
			if seen["late"] != 1 {
				t.Errorf("the late event read %d times, want once", seen["late"])
			}
		})
	}
}

// TestClickEvents: with events on, a click sink records one event per
// counted click in the transaction that counts it, none for a batch
// replayed, and none with events off; the event's data is the click's
// ClickEvent.
func TestClickEvents(t *testing.T) {
	pg := openPostgres(t).(*store.PostgresStore)
	em := openEmbedded(t).(*store.EmbeddedStore)
	emSink, err := store.NewEmbeddedClickSink(em.Db, 0)
	if err != nil {
		t.Fatal(err)
	}
	pgSink := store.NewPostgresClickSink(pg.Pool, 0)
	for name, tc := range map[string]struct {
		sink   clicks.Sink
		events *atomic.Bool
		log    link.EventLog
	}{"postgres": {pgSink, &pgSink.Events, pg}, "embedded": {emSink, &emSink.Events, em}} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			at := time.Now().UTC().Truncate(time.Microsecond)
			batch := func(id string, codes ...string) clicks.Batch {
				b := clicks.Batch{ID: id}
				for _, c := range codes {
					b.Clicks = append(b.Clicks, clicks.Click{Code: c, At: at, Class: clicks.ClassBrowser, Device: clicks.DeviceMobile,
						OS: "ios", Browser: "safari", Country: "DE", Rule: "French", Variant: "a"})
				}
				return b
			}
			if _, err := tc.sink.ApplyClicks(ctx, []clicks.Batch{batch("off-1", "ce-a")}); err != nil {
				t.Fatal(err)
			}
			tc.events.Store(true)
			for _, bs := range [][]clicks.Batch{{batch("on-1", "ce-a", "ce-b")}, {batch("on-1", "ce-a", "ce-b"), batch("on-2", "ce-c")}} {
				if _, err := tc.sink.ApplyClicks(ctx, bs); err != nil {
					t.Fatal(err)
				}
			}
			evs := readEvents(t, tc.log, 2)
			var codes []string
			for _, e := range evs {
				codes = append(codes, e.Code)
				var ce clicks.ClickEvent
				if err := json.Unmarshal(e.Data, &ce); err != nil || e.Type != clicks.EventType || ce.Code != e.Code ||
					!ce.At.Equal(at) || !e.At.Equal(at) || ce.Device != clicks.DeviceMobile || ce.Variant != "a" {
					t.Errorf("event %+v: %+v, %v", e, ce, err)
				}
			}
			if fmt.Sprint(codes) != "[ce-a ce-b ce-c]" {
				t.Errorf("click events of %v, want ce-a, ce-b, ce-c once each", codes)
			}
		})
	}
}

// TestEventsEnd: the end of the log is its last readable event; reading
// after it gets only what is recorded later.
func TestEventsEnd(t *testing.T) {
	for name, s := range openEventStores(t, true) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if end, err := s.EventsEnd(ctx); err != nil || end != (link.EventCursor{}) {
				t.Fatalf("an empty log's end: %v, %v", end, err)
			}
			for _, c := range []string{"end-a", "end-b"} {
				if err := s.Create(ctx, link.Link{Code: c, LongURL: "https://example.com/"}); err != nil {
					t.Fatal(err)
				}
			}
			var end link.EventCursor
			for deadline := time.Now().Add(30 * time.Second); end == (link.EventCursor{}) || len(readEventsFrom(t, s, end)) > 0; {
				var err error
				if end, err = s.EventsEnd(ctx); err != nil {
					t.Fatal(err)
				}
				if time.Now().After(deadline) {
					t.Fatal("the end never reached the two events")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := s.Create(ctx, link.Link{Code: "end-c", LongURL: "https://example.com/"}); err != nil {
				t.Fatal(err)
			}
			var after []link.Event
			for deadline := time.Now().Add(30 * time.Second); len(after) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				after = readEventsFrom(t, s, end)
			}
			if len(after) != 1 || after[0].Code != "end-c" {
				t.Errorf("after the end: %+v, want end-c alone", after)
			}
		})
	}
}

func readEventsFrom(t *testing.T, s link.EventLog, from link.EventCursor) []link.Event {
	t.Helper()
	evs, _, err := s.EventsAfter(context.Background(), from, 100)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestRecordExpired: the sweep records each live link's expiry once, at
// its time, from the mark on (the first sweep only sets the mark); racing
// sweeps record it once between them.
func TestRecordExpired(t *testing.T) {
	for name, s := range openEventStores(t, true) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			xs := s.(link.ExpiryLog)
			t0 := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
			if n, err := xs.RecordExpired(ctx, t0); err != nil || n != 0 {
				t.Fatalf("the first sweep: %d, %v", n, err)
			}
			for code, in := range map[string]time.Duration{"ex-a": time.Second, "ex-b": 2 * time.Second, "ex-c": 10 * time.Second,
				"ex-r": time.Second, "ex-e": 25 * time.Second} {
				if err := s.Create(ctx, link.Link{Code: code, LongURL: "https://example.com/", ExpiresAt: t0.Add(in)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Revoke(ctx, "ex-r", time.Now()); err != nil {
				t.Fatal(err)
			}
			before := len(readEventsEventually(t, s, 6))
			for _, step := range []struct {
				upTo time.Duration
				want int
			}{{5 * time.Second, 2}, {5 * time.Second, 0}, {20 * time.Second, 1}} {
				if n, err := xs.RecordExpired(ctx, t0.Add(step.upTo)); err != nil || n != step.want {
					t.Fatalf("sweep to +%v: %d, %v; want %d", step.upTo, n, err, step.want)
				}
			}
			var wg sync.WaitGroup
			var total atomic.Int64
			for range 8 {
				wg.Go(func() {
					n, err := xs.RecordExpired(ctx, t0.Add(30*time.Second))
					if err != nil {
						t.Error(err)
					}
					total.Add(int64(n))
				})
			}
			wg.Wait()
			if total.Load() != 1 {
				t.Errorf("racing sweeps recorded %d expiries of one link", total.Load())
			}
			evs := readEventsEventually(t, s, before+4)[before:]
			want := map[string]time.Duration{"ex-a": time.Second, "ex-b": 2 * time.Second, "ex-c": 10 * time.Second, "ex-e": 25 * time.Second}
			for _, e := range evs {
				if e.Type != link.EventExpired || !e.At.Equal(t0.Add(want[e.Code])) || !e.Link.ExpiresAt.Equal(e.At) {
					t.Errorf("event %s %s at %v", e.Type, e.Code, e.At)
				}
				delete(want, e.Code)
			}
			if len(want) != 0 {
				t.Errorf("no link.expired for %v", want)
			}
		})
	}
}

// readEventsEventually reads the log until it holds at least n events
// (PostgreSQL: other tests' transactions may hold the xmin back).
func readEventsEventually(t *testing.T, s link.EventLog, n int) []link.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs := readEvents(t, s, 100)
		if len(evs) >= n || time.Now().After(deadline) {
			return evs
		}
		time.Sleep(20 * time.Millisecond)
	}
}
