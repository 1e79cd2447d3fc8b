package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// webhookStores are the stores implementing webhook.Store.
func webhookStores(t *testing.T) map[string]webhook.Store {
	return map[string]webhook.Store{"postgres": openPostgres(t).(*store.PostgresStore), "embedded": openEmbedded(t).(*store.EmbeddedStore)}
}

func newEndpoint(now time.Time) webhook.Endpoint {
	return webhook.Endpoint{ID: webhook.NewEndpointID(), URL: "https://hooks.example/in", Types: []string{webhook.TypeLinkCreated},
		Keys: []webhook.Key{{Secret: webhook.NewSecret()}}, CreatedAt: now, UpdatedAt: now, Version: 1}
}

// TestWebhookEndpoints: create, read, list, update (a failing update
// changes nothing), delete; at most MaxEndpoints even when creates race.
func TestWebhookEndpoints(t *testing.T) {
	for name, s := range webhookStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			a := newEndpoint(now)
			a.Tags, a.Codes, a.Batch, a.BatchWait, a.Description = []string{"print"}, []string{"abc"}, 50, 2*time.Second, "CRM"
			a.Keys = append(a.Keys, webhook.Key{Secret: webhook.NewSecret(), Until: now.Add(time.Hour)})
			if err := s.CreateEndpoint(ctx, a, link.EventCursor{}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Endpoint(ctx, a.ID)
			if err != nil || !sameEndpoint(got, a) {
				t.Fatalf("read back %+v, %v; want %+v", got, err, a)
			}
			if _, err := s.UpdateEndpoint(ctx, a.ID, now, func(e *webhook.Endpoint) error { e.URL = "x"; return errors.New("refused") }); err == nil {
				t.Fatal("a failing update returned no error")
			}
			up, err := s.UpdateEndpoint(ctx, a.ID, now.Add(time.Minute), func(e *webhook.Endpoint) error { e.Disabled = true; return nil })
			if err != nil || !up.Disabled || up.Version != 2 || !up.UpdatedAt.Equal(now.Add(time.Minute)) || up.URL != a.URL {
				t.Fatalf("updated %+v, %v", up, err)
			}
			if _, err := s.UpdateEndpoint(ctx, "ep_none", now, func(*webhook.Endpoint) error { return nil }); !errors.Is(err, webhook.ErrNotFound) {
				t.Errorf("updating a missing endpoint: %v", err)
			}
			var ok, many atomic.Int32
			var wg sync.WaitGroup
			for range webhook.MaxEndpoints + 10 {
				wg.Go(func() {
					err := s.CreateEndpoint(ctx, newEndpoint(now), link.EventCursor{})
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, webhook.ErrTooMany):
						many.Add(1)
					default:
						t.Error(err)
					}
				})
			}
			wg.Wait()
			all, err := s.Endpoints(ctx)
			if err != nil || len(all) != webhook.MaxEndpoints || ok.Load() != webhook.MaxEndpoints-1 || many.Load() != 11 {
				t.Errorf("%d endpoints (%v), %d created, %d refused", len(all), err, ok.Load(), many.Load())
			}
			if err := s.DeleteEndpoint(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Endpoint(ctx, a.ID); !errors.Is(err, webhook.ErrNotFound) {
				t.Errorf("read after delete: %v", err)
			}
			if err := s.DeleteEndpoint(ctx, a.ID); !errors.Is(err, webhook.ErrNotFound) {
				t.Errorf("second delete: %v", err)
			}
		})
	}
}

func sameEndpoint(a, b webhook.Endpoint) bool {
	if len(a.Keys) != len(b.Keys) {
		return false
	}
	for i := range a.Keys {
		if a.Keys[i].Secret.Encode() != b.Keys[i].Secret.Encode() || !a.Keys[i].Until.Equal(b.Keys[i].Until) {
			return false
		}
	}
	a.Keys, b.Keys = nil, nil
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// TestWebhookLease: one owner at a time, even when 50 race for it; the
// holder renews; another takes over once the lease ends, after which the
// first one's writes are refused, or at once when its holder releases it
// (and only its holder can).
func TestWebhookLease(t *testing.T) {
	for name, s := range webhookStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := newEndpoint(time.Now())
			if err := s.CreateEndpoint(ctx, e, link.EventCursor{Tx: 7, Seq: 9}); err != nil {
				t.Fatal(err)
			}
			var winners atomic.Int32
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Go(func() {
					_, cur, ok, err := s.Lease(ctx, e.ID, fmt.Sprintf("owner-%d", i), 400*time.Millisecond)
					if err != nil {
						t.Error(err)
					}
					if ok {
						winners.Add(1)
						if cur != (link.EventCursor{Tx: 7, Seq: 9}) {
							t.Errorf("cursor %v", cur)
						}
					}
				})
			}
			wg.Wait()
			if winners.Load() != 1 {
				t.Fatalf("%d owners took one lease", winners.Load())
			}
			if _, _, ok, _ := s.Lease(ctx, e.ID, "late", time.Second); ok {
				t.Fatal("a held lease was taken")
			}
			time.Sleep(500 * time.Millisecond)
			if _, _, ok, err := s.Lease(ctx, e.ID, "late", 10*time.Second); !ok || err != nil {
				t.Fatalf("an ended lease was not taken: %v", err)
			}
			if _, _, ok, _ := s.Lease(ctx, e.ID, "late", 10*time.Second); !ok {
				t.Fatal("the holder could not renew")
			}
			if err := s.Release(ctx, e.ID, "owner-0"); err != nil {
				t.Fatal(err)
			}
			if _, _, ok, _ := s.Lease(ctx, e.ID, "next", 10*time.Second); ok {
				t.Fatal("a lease released by another owner than its holder was taken")
			}
			if err := s.Release(ctx, e.ID, "late"); err != nil {
				t.Fatal(err)
			}
			if _, cur, ok, err := s.Lease(ctx, e.ID, "next", 10*time.Second); !ok || err != nil || cur != (link.EventCursor{Tx: 7, Seq: 9}) {
				t.Fatalf("a released lease was not taken at once (%v, %v), or its cursor moved (%v)", ok, err, cur)
			}
			if err := s.Release(ctx, "ep_none", "next"); err != nil {
				t.Errorf("releasing a missing endpoint: %v", err)
			}
			for i := range 50 {
				err := s.Enqueue(ctx, e.ID, fmt.Sprintf("owner-%d", i), nil, link.EventCursor{})
				if !errors.Is(err, webhook.ErrLeaseLost) {
					t.Fatalf("owner-%d wrote after losing the lease: %v", i, err)
				}
			}
			if _, _, _, err := s.Lease(ctx, "ep_none", "x", time.Second); !errors.Is(err, webhook.ErrNotFound) {
				t.Errorf("leasing a missing endpoint: %v", err)
			}
		})
	}
}

// TestWebhookMessages: messages enqueued with the cursor, due in order,
// settled with their attempts, listed, replayed with a new series,
// an endpoint disabled by a 410, delivered ones pruned.
func TestWebhookMessages(t *testing.T) {
	for name, s := range webhookStores(t) {
		t.Run(name, func(t *testing.T) { webhookMessages(t, s) })
	}
}

func webhookMessages(t *testing.T, s webhook.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	e := newEndpoint(now)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.CreateEndpoint(ctx, e, link.EventCursor{}))
	// Two more endpoints around e (ids below and above), one message
	// each, that e's listing must not show.
	for _, id := range []string{"ep_0", "ep_zzzz"} {
		o := newEndpoint(now)
		o.ID = id
		must(s.CreateEndpoint(ctx, o, link.EventCursor{}))
		if _, _, ok, err := s.Lease(ctx, id, "me", time.Minute); !ok || err != nil {
			t.Fatalf("lease %s: %v %v", id, ok, err)
		}
		must(s.Enqueue(ctx, id, "me", []webhook.Message{{ID: webhook.NewID(now), Type: webhook.TypeClick, At: now,
			Body: []byte(`{}`), Events: 1, NextAt: now}}, link.EventCursor{}))
	}
	_, _, ok, err := s.Lease(ctx, e.ID, "me", time.Minute)
	if !ok || err != nil {
		t.Fatalf("lease: %v %v", ok, err)
	}
	var msgs []webhook.Message
	for i := range 3 {
		msgs = append(msgs, webhook.Message{ID: webhook.NewID(now.Add(time.Duration(i) * time.Millisecond)), Type: webhook.TypeLinkCreated,
			At: now, Body: []byte(fmt.Sprintf(`{"n":%d}`, i)), Events: 1, NextAt: now.Add(time.Duration(i) * time.Second)})
	}
	must(s.Enqueue(ctx, e.ID, "me", msgs, link.EventCursor{Tx: 1, Seq: 3}))
	if _, cur, _, _ := s.Lease(ctx, e.ID, "me", time.Minute); cur != (link.EventCursor{Tx: 1, Seq: 3}) {
		t.Errorf("cursor after enqueue %v", cur)
	}
	due, err := s.Due(ctx, e.ID, now.Add(1500*time.Millisecond), 10)
	if err != nil || len(due) != 2 || due[0].ID != msgs[0].ID || string(due[1].Body) != `{"n":1}` || due[0].State != webhook.StatePending {
		t.Fatalf("due %+v, %v", due, err)
	}
	att := func(m webhook.Message, n, status int) webhook.AttemptLog {
		return webhook.AttemptLog{Message: m.ID, N: n, At: now, Status: status, Latency: 1500 * time.Microsecond, Body: []byte("ok")}
	}
	must(s.Settle(ctx, e.ID, "me", []webhook.Result{
		{Attempt: att(msgs[0], 1, 200), State: webhook.StateDelivered},
		{Attempt: att(msgs[1], 1, 500), State: webhook.StatePending, NextAt: now.Add(time.Hour)},
	}, ""))
	if due, _ := s.Due(ctx, e.ID, now.Add(10*time.Second), 10); len(due) != 1 || due[0].ID != msgs[2].ID {
		t.Errorf("due after settling: %+v", due)
	}
	list, err := s.Messages(ctx, e.ID, "", "", 10)
	if err != nil || len(list) != 3 || list[0].ID != msgs[2].ID || list[2].State != webhook.StateDelivered || list[1].Attempts != 1 {
		t.Fatalf("messages %+v, %v", list, err)
	}
	if page, _ := s.Messages(ctx, e.ID, webhook.StatePending, list[0].ID, 10); len(page) != 1 || page[0].ID != msgs[1].ID {
		t.Errorf("pending before the newest: %+v", page)
	}
	logs, err := s.Attempts(ctx, e.ID, msgs[1].ID)
	if err != nil || len(logs) != 1 || logs[0].Status != 500 || logs[0].Latency != 1500*time.Microsecond || string(logs[0].Body) != "ok" {
		t.Errorf("attempts %+v, %v", logs, err)
	}
	if _, err := s.Attempts(ctx, e.ID, "msg_none"); !errors.Is(err, webhook.ErrNoMessage) {
		t.Errorf("attempts of a missing message: %v", err)
	}
	n, err := s.Replay(ctx, e.ID, msgs[0].ID, time.Time{}, now)
	if err != nil || n != 1 {
		t.Fatalf("replay one: %d, %v", n, err)
	}
	if due, _ := s.Due(ctx, e.ID, now, 10); len(due) != 1 || due[0].ID != msgs[0].ID || due[0].Series != 1 || due[0].Attempts != 1 {
		t.Errorf("the replayed message: %+v", due)
	}
	if n, err := s.Replay(ctx, e.ID, "", now.Add(-time.Minute), now); err != nil || n != 3 {
		t.Errorf("replay since: %d, %v", n, err)
	}
	if _, err := s.Replay(ctx, e.ID, "msg_none", time.Time{}, now); !errors.Is(err, webhook.ErrNoMessage) {
		t.Errorf("replaying a missing message: %v", err)
	}
	must(s.Settle(ctx, e.ID, "me", []webhook.Result{{Attempt: att(msgs[2], 1, 410), State: webhook.StateFailed}}, "410 Gone"))
	if got, _ := s.Endpoint(ctx, e.ID); !got.Disabled || got.DisabledReason != "410 Gone" {
		t.Errorf("after a 410: %+v", got)
	}
	must(s.Prune(ctx, time.Now().Add(time.Hour)))
	if left, _ := s.Messages(ctx, e.ID, "", "", 10); len(left) != 2 {
		t.Errorf("after pruning, %d messages left, want the 2 pending", len(left))
	}
}

// TestWebhookBacklog: the pending messages and the outbox, as the
// metrics read them.
func TestWebhookBacklog(t *testing.T) {
	pg := openPostgres(t).(*store.PostgresStore)
	em := openEmbedded(t).(*store.EmbeddedStore)
	for name, s := range map[string]interface {
		webhook.Store
		link.Store
	}{"postgres": pg, "embedded": em} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if b, err := s.Backlog(ctx); err != nil || b.Pending != 0 || !b.OldestPending.IsZero() || !b.OldestEvent.IsZero() {
				t.Fatalf("an empty backlog: %+v, %v", b, err)
			}
			pg.Events, em.Events = true, true
			if err := s.Create(ctx, link.Link{Code: "bl-a", LongURL: "https://example.com/"}); err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			e := newEndpoint(now)
			if err := s.CreateEndpoint(ctx, e, link.EventCursor{}); err != nil {
				t.Fatal(err)
			}
			if _, _, ok, err := s.Lease(ctx, e.ID, "me", time.Minute); !ok || err != nil {
				t.Fatal(ok, err)
			}
			msgs := []webhook.Message{{ID: webhook.NewID(now), Type: webhook.TypeClick, At: now, Body: []byte(`{}`), Events: 1, NextAt: now},
				{ID: webhook.NewID(now.Add(time.Millisecond)), Type: webhook.TypeClick, At: now, Body: []byte(`{}`), Events: 1, NextAt: now}}
			if err := s.Enqueue(ctx, e.ID, "me", msgs, link.EventCursor{}); err != nil {
				t.Fatal(err)
			}
			b, err := s.Backlog(ctx)
			if err != nil || b.Pending != 2 || time.Since(b.OldestPending) > time.Minute || time.Since(b.OldestEvent) > time.Minute {
				t.Errorf("backlog %+v, %v", b, err)
			}
		})
	}
}
