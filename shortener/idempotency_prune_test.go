package shortener

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// Expired idempotency records are deleted by a later keyed create, at most
// IdemPruneBatch at a time; live ones stay.
func TestIdempotencyPrune(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	record := func(t *testing.T, ts link.TxStore, key string, at time.Time) {
		t.Helper()
		c := &link.IdemClaim{Scope: "0123456789abcdef", Key: key, BodySHA256: sha256.Sum256([]byte(key))}
		if _, _, err := ts.CreateTx(ctx, c, at, func(context.Context, link.LinkTx) (link.IdemAnswer, error) {
			return link.IdemAnswer{Status: 400, Body: []byte(`{}`)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(t *testing.T, ts link.TxStore, count func() int) {
		for i := range link.IdemPruneBatch + 5 {
			record(t, ts, fmt.Sprintf("old-%d", i), base)
		}
		record(t, ts, "live", base.Add(link.IdemTTL-time.Second))
		if n := count(); n != link.IdemPruneBatch+6 {
			t.Fatalf("%d records before pruning, want %d", n, link.IdemPruneBatch+6)
		}
		later := base.Add(link.IdemTTL + time.Hour)
		record(t, ts, "trigger", later)
		if n := count(); n != 5+2 {
			t.Errorf("%d records after one prune, want 7 (5 expired left, live, trigger)", n)
		}
		if _, _, found, _ := ts.IdemLookup(ctx, "0123456789abcdef", "live", later); !found {
			t.Errorf("the live record was pruned")
		}
	}
	t.Run("embedded", func(t *testing.T) {
		s := openTestEmbedded(t).(*store.EmbeddedStore)
		run(t, s, func() int {
			n := 0
			_ = s.Db.View(func(tx *bolt.Tx) error {
				n = tx.Bucket(store.EmbeddedIdem).Stats().KeyN
				if a := tx.Bucket(store.EmbeddedIdemAge).Stats().KeyN; a != n {
					t.Errorf("%d records but %d age entries", n, a)
				}
				return nil
			})
			return n
		})
	})
	t.Run("postgres", func(t *testing.T) {
		pool := testPool(t, testenv.Postgres(t), pgpool.Settings{})
		s, err := store.OpenPostgres(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		run(t, s, func() int {
			var n int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM shortener_idempotency`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		})
	})
}
