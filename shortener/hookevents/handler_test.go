package hookevents

import (
	"context"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/registry"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

func newHandler(t *testing.T, queue int) *Handler {
	t.Helper()
	w := &Handler{Queue: queue}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := w.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

func caddyEvent(t *testing.T, name string, data map[string]any) caddy.Event {
	t.Helper()
	e, err := caddy.NewEvent(caddy.Context{Context: context.Background()}, name, data)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestHandlerRecord: the rate limiter's events reach the outbox of the
// store once, though two handlers (a reload's old and new) use it, under
// Caddy's event id, as the webhook types, with their data; other events
// are left alone; Cleanup writes what is still queued.
func TestHandlerRecord(t *testing.T) {
	s, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, owner := range []*int{new(int), new(int)} {
		registry.Add(owner, s)
		registry.SetOutbox(owner, s)
		defer registry.Remove(owner)
	}
	w := newHandler(t, 0)
	exceeded := caddyEvent(t, "ratelimit_exceeded", map[string]any{"zone": "api", "store_key": "rl:api:x", "retry_after": 3})
	ban := caddyEvent(t, "ratelimit_ban_set", map[string]any{"zone": "api", "store_key": "rl:api:x", "retry_after": 60, "ban": 60, "until": "2026-12-06T10:01:00Z"})
	threshold := caddyEvent(t, "ratelimit_threshold", map[string]any{"zone": "api", "store_key": "rl:api:x", "threshold": 80, "used": 8, "quota": 10,
		"period_start": "2026-12-01T00:00:00Z", "period_end": "2027-01-01T00:00:00Z"})
	for _, e := range []caddy.Event{exceeded, caddyEvent(t, "tls_get_certificate", nil), ban, threshold} {
		if err := w.Handle(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Cleanup(); err != nil {
		t.Fatal(err)
	}
	evs, _, err := s.EventsAfter(context.Background(), link.EventCursor{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 {
		t.Fatalf("outbox holds %+v, want the three events once", evs)
	}
	for i, want := range []struct {
		e    caddy.Event
		typ  string
		data string
	}{
		{exceeded, "ratelimit.exceeded", `{"retry_after":3,"store_key":"rl:api:x","zone":"api"}`},
		{ban, "ratelimit.ban_set", `{"ban":60,"retry_after":60,"store_key":"rl:api:x","until":"2026-12-06T10:01:00Z","zone":"api"}`},
		{threshold, "ratelimit.threshold", `{"period_end":"2027-01-01T00:00:00Z","period_start":"2026-12-01T00:00:00Z","quota":10,"store_key":"rl:api:x","threshold":80,"used":8,"zone":"api"}`},
	} {
		id := want.e.ID()
		if e := evs[i]; e.ID != "evt_"+hex.EncodeToString(id[:]) || e.Type != want.typ || string(e.Data) != want.data ||
			link.ToMicros(e.At) != link.ToMicros(want.e.Timestamp()) {
			t.Errorf("event %d: %+v %s, want %s %s", i, e, e.Data, want.typ, want.data)
		}
	}
}

// flakyRecorder fails while down, and keeps what it was given otherwise.
type flakyRecorder struct {
	mu   sync.Mutex
	down bool
	got  []link.Event
	hits int
}

func (f *flakyRecorder) RecordEvents(_ context.Context, evs []link.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hits++
	if f.down {
		return errors.New("store down")
	}
	f.got = append(f.got, evs...)
	return nil
}

func (f *flakyRecorder) state() (hits, got int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits, len(f.got)
}

// TestHandlerStoreDown: a store that fails gets the events again
// once it is back, each once and in order, tried with backoff meanwhile
// (not every tick); a full queue loses events and counts them.
func TestHandlerStoreDown(t *testing.T) {
	rec := &flakyRecorder{down: true}
	owner := new(int)
	registry.SetOutbox(owner, rec)
	defer registry.Remove(owner)
	w := newHandler(t, 0)
	var sent []caddy.Event
	for i := range 50 {
		e := caddyEvent(t, "ratelimit_exceeded", map[string]any{"n": i})
		sent = append(sent, e)
		_ = w.Handle(context.Background(), e)
	}
	eventually(t, "the down store is tried", func() bool { h, _ := rec.state(); return h >= 1 })
	time.Sleep(500 * time.Millisecond)
	if h, _ := rec.state(); h > 2 {
		t.Errorf("a down store was tried %d times in half a second: no backoff", h)
	}
	rec.mu.Lock()
	rec.down = false
	rec.mu.Unlock()
	eventually(t, "the events are written once the store is back", func() bool { _, n := rec.state(); return n >= 50 })
	if err := w.Cleanup(); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) != 50 {
		t.Fatalf("written %d events, want 50", len(rec.got))
	}
	for i, e := range rec.got {
		id := sent[i].ID()
		if e.ID != "evt_"+hex.EncodeToString(id[:]) {
			t.Fatalf("event %d is %s, want %s's", i, e.ID, id)
		}
	}

	full := newHandler(t, 1)
	close(full.stop) // no writer: the queue fills
	<-full.done
	full.stop = nil
	for range 3 {
		_ = full.Handle(context.Background(), caddyEvent(t, "ratelimit_ban_set", nil))
	}
	if n := sample(full.lost); n != 2 {
		t.Errorf("lost %v events past a queue of 1, want 2", n)
	}
}

// TestCaddyfileHandler: `on <event> shortener_webhooks` in the events
// global option, with its queue, and bad settings refused with their line.
func TestCaddyfileHandler(t *testing.T) {
	var w Handler
	if err := w.UnmarshalCaddyfile(caddyfile.NewTestDispenser("shortener_webhooks {\n queue 500\n}")); err != nil || w.Queue != 500 {
		t.Errorf("queue 500: %+v, %v", w, err)
	}
	for _, tc := range []struct{ input, want string }{
		{"shortener_webhooks now", "wrong argument count"},
		{"shortener_webhooks {\n queue 0\n}", "Testfile:2"},
		{"shortener_webhooks {\n queue 2000000\n}", "queue 2000000 is over 1000000, at Testfile:2"},
		{"shortener_webhooks {\n bogus\n}", `unknown shortener_webhooks setting "bogus" (want queue), at Testfile:2`},
	} {
		var w Handler
		err := w.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.input, err, tc.want)
		}
	}
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
	}
}

// sample reads a counter.
func sample(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
