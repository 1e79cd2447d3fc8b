package shortener

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// provision runs Provision on h as Caddy would (the store is opened by the
// handler), returning its error; Cleanup is left to the caller.
func provision(t *testing.T, h *Handler) error {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := h.Provision(ctx); err != nil {
		return err
	}
	return h.Validate()
}

// A config reload provisions the new handler before cleaning up the old
// one: both must share the embedded store's file instead of deadlocking on
// its lock.
func TestProvisionEmbeddedSharedAcrossReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "links.db")
	old := &Handler{Path: path, API: "/api", APIKeys: []string{testKey}}
	if err := provision(t, old); err != nil {
		t.Fatal(err)
	}
	out := create(t, old, `{"long_url":"https://example.com/reload"}`)

	done := make(chan error, 1)
	neu := &Handler{Store: "embedded", Path: path, API: "/api", APIKeys: []string{testKey}}
	go func() { done <- provision(t, neu) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("provisioning a second handler on the same file blocked")
	}
	if err := old.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if w := serve(t, neu, "GET", "/"+out.Code, ""); w.Code != http.StatusFound {
		t.Errorf("new config after the old one's cleanup = %d, want 302", w.Code)
	}
	if err := neu.Cleanup(); err != nil {
		t.Fatal(err)
	}
	// The last release closed the file: it can be opened again.
	s, err := store.OpenEmbedded(path)
	if err != nil {
		t.Fatalf("reopening after the last cleanup: %v", err)
	}
	s.Close()
}

func TestProvisionPostgresFromPlaceholder(t *testing.T) {
	t.Setenv("SHORTENER_TEST_DSN", testenv.Postgres(t))
	t.Setenv("SHORTENER_TEST_KEY", "k-from-env-0123456789")
	h := &Handler{Store: "postgres", DSN: "{env.SHORTENER_TEST_DSN}", API: "/api", APIKeys: []string{"{env.SHORTENER_TEST_KEY}"}}
	if err := provision(t, h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Cleanup() })
	w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/pg"}`, "Authorization", "Bearer k-from-env-0123456789")
	if w.Code != http.StatusCreated {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	if w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/pg"}`, "Authorization", "Bearer {env.SHORTENER_TEST_KEY}"); w.Code != http.StatusUnauthorized {
		t.Errorf("the unexpanded placeholder as key = %d, want 401", w.Code)
	}
}

func TestProvisionErrors(t *testing.T) {
	t.Setenv("SHORTENER_EMPTY_KEY", "")
	t.Setenv("SHORTENER_SHORT_KEY", "fifteen-bytes!!")
	t.Setenv("SHORTENER_KEY_A", "secret-pw-0123456789")
	t.Setenv("SHORTENER_KEY_B", "secret-pw-0123456789")
	down := fmt.Sprintf("postgres://postgres:secret-pw@127.0.0.1:%d/x?connect_timeout=2", testenv.FreePort(t))
	for _, tc := range []struct {
		name string
		h    *Handler
		want string
	}{
		{"api without key", &Handler{Path: filepath.Join(t.TempDir(), "a.db"), API: "/api"}, "api_key"},
		{"empty key from env", &Handler{Path: filepath.Join(t.TempDir(), "b.db"), API: "/api", APIKeys: []string{"{env.SHORTENER_EMPTY_KEY}"}}, "empty"},
		{"short key from env", &Handler{Path: filepath.Join(t.TempDir(), "d.db"), API: "/api", APIKeys: []string{"{env.SHORTENER_SHORT_KEY}"}}, "15 bytes long; at least 16"},
		{"short read key from env", &Handler{Path: filepath.Join(t.TempDir(), "e.db"), API: "/api", APIReadKeys: []string{"{env.SHORTENER_SHORT_KEY}"}}, "api_read_key #1 is 15 bytes long"},
		{"read key equal to a full key from env", &Handler{Path: filepath.Join(t.TempDir(), "f.db"), API: "/api", APIKeys: []string{"{env.SHORTENER_KEY_A}"}, APIReadKeys: []string{"{env.SHORTENER_KEY_B}"}}, "api_read_key #1 is also an api_key"},
		{"postgres down", &Handler{Store: "postgres", DSN: down}, "postgres"},
		{"bad redis", &Handler{Path: filepath.Join(t.TempDir(), "c.db"), Redis: &redispool.Config{URL: "http://nope"}}, "redis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := provision(t, tc.h)
			t.Cleanup(func() { tc.h.Cleanup() })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Provision = %v, want an error about %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret-pw") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

// Redis is a cache: down at start, the handler still loads and serves from
// the store.
func TestProvisionRedisDownAtStart(t *testing.T) {
	s := newMemStore()
	s.links["abc"] = link.Link{Code: "abc", LongURL: "https://example.com/"}
	h := newHandler(t, s, func(h *Handler) {
		h.Redis = &redispool.Config{URL: fmt.Sprintf("redis://127.0.0.1:%d", testenv.FreePort(t))}
	})
	if w := serve(t, h, "GET", "/abc", ""); w.Code != http.StatusFound {
		t.Errorf("redirect with Redis down since start = %d, want 302", w.Code)
	}
}
