package shortener

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/usagepool"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// embeddedStores shares one open embedded store per file across config
// reloads: the new config is provisioned before the old one is cleaned up,
// and bbolt would wait forever on its own file lock.
var embeddedStores = usagepool.New((*store.EmbeddedStore).Close)

// sharedStore hides Close from the handler: the pool closes it.
type sharedStore struct{ link.Store }

func (sharedStore) Close() error { return nil }

// unshared is the store a sharedStore holds (s itself otherwise), for the
// optional interfaces of the real stores.
func unshared(s link.Store) link.Store {
	if sh, ok := s.(sharedStore); ok {
		return sh.Store
	}
	return s
}

// openStore opens the configured store: a pooled PostgreSQL connection
// (migrated, see migrate.go) or the embedded file shared across reloads;
// ownStore releases it.
func (h *Handler) openStore(ctx caddy.Context, repl *caddy.Replacer) error {
	switch h.Store {
	case "postgres":
		dsn := repl.ReplaceKnown(h.DSN, "")
		pool, err := pgpool.Get(dsn, pgpool.Settings{ApplicationName: "caddy-shortener", StatementTimeout: 2 * time.Second})
		if err != nil {
			return fmt.Errorf("shortener store: %w", err)
		}
		if err := pgpool.Ping(ctx, pool, dsn, 5*time.Second); err != nil {
			_ = pool.Release()
			return fmt.Errorf("shortener store: %w", err)
		}
		mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := store.OpenPostgres(mctx, pool.Pool)
		if err != nil {
			_ = pool.Release()
			return fmt.Errorf("shortener store %s: %w", pgpool.Redact(dsn), err)
		}
		h.store = s
		h.ownStore = pool.Release
	default:
		path := repl.ReplaceKnown(h.Path, "")
		if path == "" {
			path = filepath.Join(caddy.AppDataDir(), "edgekit", "shortener.db")
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("shortener store: %w", err)
		}
		s, use, err := embeddedStores.LoadOrNew(abs, func() (*store.EmbeddedStore, error) { return store.OpenEmbedded(abs) })
		if err != nil {
			return fmt.Errorf("shortener store %s: %w", abs, err)
		}
		h.store = sharedStore{s}
		h.ownStore = use.Release
	}
	return nil
}
