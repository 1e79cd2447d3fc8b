package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/link/linktest"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

func TestPostgresStore(t *testing.T) {
	linktest.Run(t, linktest.Harness{
		Open: openPostgres,
		Clicks: func(t *testing.T, s link.Store) linktest.Clicks {
			return sinkClicks{store.NewPostgresClickSink(s.(*store.PostgresStore).Pool, 0)}
		},
		// Short walks, so that pages also take the steps after the walk
		// (postgres_search.go): where it stopped, then the trigram index.
		Tunings: func(s link.Store) ([]func(), func()) {
			ps := s.(*store.PostgresStore)
			var settings []func()
			for _, walk := range []int{1, 2, 3, 5} {
				settings = append(settings, func() { ps.SearchWalk = walk })
			}
			return settings, func() { ps.SearchWalk = 0 }
		},
	})
}

func TestEmbeddedStore(t *testing.T) {
	linktest.Run(t, linktest.Harness{
		Open: openEmbedded,
		Clicks: func(t *testing.T, s link.Store) linktest.Clicks {
			sink, err := store.NewEmbeddedClickSink(s.(*store.EmbeddedStore).Db, 0)
			if err != nil {
				t.Fatal(err)
			}
			return sinkClicks{sink}
		},
	})
}

// openPostgres opens a store in a schema of its own, migrated.
func openPostgres(t *testing.T) link.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := store.OpenPostgres(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openEmbedded(t *testing.T) link.Store {
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

// sinkClicks is a store's click sink as the suite uses it.
type sinkClicks struct{ sink clicks.Sink }

func (c sinkClicks) Add(ctx context.Context, perCode map[string]int64, at time.Time) error {
	batch := clicks.Batch{ID: fmt.Sprintf("linktest-%d", at.UnixNano())}
	for code, n := range perCode {
		for range n {
			batch.Clicks = append(batch.Clicks, clicks.Click{Code: code, At: at})
		}
	}
	_, err := c.sink.ApplyClicks(ctx, []clicks.Batch{batch})
	return err
}

func (c sinkClicks) Total(ctx context.Context, code string) (int64, error) {
	return c.sink.ClickTotal(ctx, code)
}

func (c sinkClicks) PruneAll(ctx context.Context, cutoff time.Time) error {
	pruner, ok := c.sink.(clicks.ClickPruner)
	if !ok {
		return fmt.Errorf("%T prunes no clicks", c.sink)
	}
	for done := false; !done; {
		var err error
		if _, done, err = pruner.PruneClicks(ctx, clicks.ClickCutoffs{Hourly: cutoff, Daily: cutoff}, 1000); err != nil {
			return err
		}
	}
	return nil
}
