package shortener

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/link/linktest"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

func openTestEmbedded(t *testing.T) link.Store {
	t.Helper()
	s, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "shortener.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestEmbeddedCreatesFileAndDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "caddy", "shortener")
	path := filepath.Join(dir, "links.db")
	s, err := store.OpenEmbedded(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("mode of %s = %v, want %v", p, fi.Mode(), want)
		}
	}
}

func TestEmbeddedPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "links.db")
	s, err := store.OpenEmbedded(path)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	want := link.Link{Code: "keep", LongURL: "https://example.com/keep", CreatedAt: created, ExpiresAt: created.Add(time.Hour)}
	if err := s.Create(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(ctx, "keep", created.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NextBlock(ctx, 500); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = store.OpenEmbedded(path)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	defer s.Close()
	got, err := s.Get(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	want.RevokedAt = created.Add(time.Minute)
	linktest.AssertLink(t, got, want)
	if first, err := s.NextBlock(ctx, 1); err != nil || first != 501 {
		t.Errorf("NextBlock after reopen = %d, %v, want 501", first, err)
	}
}

func TestEmbeddedLockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "links.db")
	s, err := store.OpenEmbedded(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// bbolt flocks the file: a second open waits for the lock, then fails
	// with an error that says so.
	start := time.Now()
	s2, err := store.OpenEmbeddedTimeout(path, 100*time.Millisecond)
	if err == nil {
		s2.Close()
		t.Fatal("second open of a locked file succeeded")
	}
	if !strings.Contains(err.Error(), "locked") || !strings.Contains(err.Error(), path) {
		t.Errorf("error = %q, want it to name the file and say it is locked", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second open took %v, want about 100ms", d)
	}
	// Once the first store is closed, the file opens again.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s3, err := store.OpenEmbeddedTimeout(path, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	s3.Close()
}

func TestEmbeddedBadPath(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", filepath.Join(file, "sub", "links.db"), file} {
		s, err := store.OpenEmbedded(p)
		if err == nil {
			s.Close()
			t.Errorf("OpenEmbedded(%q) succeeded, want an error", p)
		}
	}
}

func TestEmbeddedCanceledContext(t *testing.T) {
	s := openTestEmbedded(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(ctx, "abc"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get(canceled) = %v, want context.Canceled", err)
	}
	if err := s.Create(ctx, link.Link{Code: "abc", LongURL: "https://example.com/"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Create(canceled) = %v, want context.Canceled", err)
	}
	if _, err := s.Get(context.Background(), "abc"); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Get after canceled Create = %v, want ErrNotFound", err)
	}
}
