package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// sessionStore is what both stores implement for dashboard sessions.
type sessionStore interface {
	CreateSession(ctx context.Context, s store.Session) error
	GetSession(ctx context.Context, id [store.SessionIDLen]byte) (store.Session, error)
	TouchSession(ctx context.Context, id [store.SessionIDLen]byte, seen time.Time) error
	DeleteSession(ctx context.Context, id [store.SessionIDLen]byte) (bool, error)
	DeleteKeySessions(ctx context.Context, key string) (int, error)
	ListSessions(ctx context.Context, key string, now time.Time, limit int) ([]store.Session, error)
}

// TestSessions: both stores keep, read, touch (never back), list per key
// (newest first, unexpired, bounded), delete one or a key's, and prune
// expired sessions at the next sign-in; 200 concurrent sign-ins are all
// kept.
func TestSessions(t *testing.T) {
	for name, open := range map[string]func(*testing.T) link.Store{"postgres": openPostgres, "embedded": openEmbedded} {
		t.Run(name, func(t *testing.T) { testSessions(t, open(t).(sessionStore)) })
	}
}

func testSessions(t *testing.T, st sessionStore) {
	ctx := context.Background()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	mk := func(i int, key string, created time.Time) store.Session {
		s := store.Session{Key: key, Scope: 2, Signer: [8]byte{1, 2, 3}, CreatedAt: created, LastSeen: created,
			ExpiresAt: created.Add(time.Hour)}
		s.ID[0], s.ID[1] = byte(i), byte(i>>8)
		return s
	}
	old := mk(1, "aaaaaaaaaaaaaaaa", base)
	if err := st.CreateSession(ctx, old); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetSession(ctx, old.ID)
	if err != nil || got.Key != old.Key || got.Signer != old.Signer || !got.ExpiresAt.Equal(old.ExpiresAt) || got.Scope != 2 {
		t.Fatalf("GetSession = %+v, %v, want %+v", got, err, old)
	}
	if err := st.TouchSession(ctx, old.ID, base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.TouchSession(ctx, old.ID, base.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetSession(ctx, old.ID); !got.LastSeen.Equal(base.Add(time.Minute)) {
		t.Errorf("last seen %v after touches at +1m and +1s, want +1m", got.LastSeen)
	}
	later := base.Add(2 * time.Hour) // old has expired
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			key := "bbbbbbbbbbbbbbbb"
			if i%2 == 0 {
				key = "cccccccccccccccc"
			}
			if err := st.CreateSession(ctx, mk(i+2, key, later.Add(time.Duration(i)*time.Millisecond))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := st.GetSession(ctx, old.ID); !errors.Is(err, store.ErrSessionNotFound) {
		t.Errorf("an expired session after later sign-ins: %v, want ErrSessionNotFound (pruned)", err)
	}
	list, err := st.ListSessions(ctx, "bbbbbbbbbbbbbbbb", later, 1000)
	if err != nil || len(list) != 100 {
		t.Fatalf("ListSessions(b) = %d, %v, want 100", len(list), err)
	}
	for i := 1; i < len(list); i++ {
		if list[i].CreatedAt.After(list[i-1].CreatedAt) || list[i].Key != "bbbbbbbbbbbbbbbb" {
			t.Fatalf("list not newest first or of another key at %d", i)
		}
	}
	if all, _ := st.ListSessions(ctx, "", later, 7); len(all) != 7 {
		t.Errorf("ListSessions(all, 7) = %d, want 7", len(all))
	}
	if gone, _ := st.ListSessions(ctx, "", later.Add(2*time.Hour), 1000); len(gone) != 0 {
		t.Errorf("ListSessions after every expiry = %d, want 0", len(gone))
	}
	if ok, err := st.DeleteSession(ctx, list[0].ID); !ok || err != nil {
		t.Errorf("DeleteSession = %t, %v", ok, err)
	}
	if ok, _ := st.DeleteSession(ctx, list[0].ID); ok {
		t.Errorf("DeleteSession twice found it again")
	}
	if n, err := st.DeleteKeySessions(ctx, "bbbbbbbbbbbbbbbb"); n != 99 || err != nil {
		t.Errorf("DeleteKeySessions = %d, %v, want 99", n, err)
	}
	if rest, _ := st.ListSessions(ctx, "", later, 1000); len(rest) != 100 {
		t.Errorf("sessions of the other key: %d, want 100", len(rest))
	}
	if err := st.TouchSession(ctx, list[0].ID, later); err != nil {
		t.Errorf("touching a deleted session: %v", err)
	}
}
