package shortener

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/link/linktest"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// testPool returns a shared pool for dsn, released when the test ends.
func testPool(t *testing.T, dsn string, s pgpool.Settings) *pgxpool.Pool {
	t.Helper()
	p, err := pgpool.Get(dsn, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Release() })
	return p.Pool
}

func openTestPostgres(t *testing.T) link.Store {
	t.Helper()
	pool := testPool(t, testenv.Postgres(t), pgpool.Settings{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.OpenPostgres(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMigrationFiles(t *testing.T) {
	ms, err := store.LoadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no migrations embedded")
	}
	for i, m := range ms {
		if m.Version != i+1 || m.Name == "" || m.Sql == "" {
			t.Errorf("migration %d = {%d %q, %d bytes}, want version %d with a name and SQL", i, m.Version, m.Name, len(m.Sql), i+1)
		}
	}
}

// TestPostgresConcurrentOpen starts 8 instances (8 pools) at once on a fresh
// schema: all open, and each migration is applied exactly once (the
// migrations use plain CREATE TABLE, so a second application would fail).
func TestPostgresConcurrentOpen(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const instances = 8
	pools := make([]*pgxpool.Pool, instances)
	for i := range pools {
		pools[i] = testPool(t, dsn, pgpool.Settings{ApplicationName: fmt.Sprintf("edgekit-test-%d", i)})
	}
	stores := make([]*store.PostgresStore, instances)
	errs := make([]error, instances)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range instances {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = store.OpenPostgres(ctx, pools[i])
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: OpenPostgres: %v", i, err)
		}
	}

	ms, err := store.LoadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pools[0].Query(ctx, `SELECT version FROM shortener_schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != len(ms) {
		t.Fatalf("applied versions %v, want %d migrations", versions, len(ms))
	}
	for i, v := range versions {
		if int(v) != ms[i].Version {
			t.Errorf("applied versions %v, want 1..%d", versions, len(ms))
			break
		}
	}

	// The instances share the data and the ID counter.
	if err := stores[3].Create(ctx, link.Link{Code: "shared", LongURL: "https://example.com/s"}); err != nil {
		t.Fatal(err)
	}
	if l, err := stores[5].Get(ctx, "shared"); err != nil || l.LongURL != "https://example.com/s" {
		t.Errorf("other instance Get = %+v, %v", l, err)
	}
	a, err := stores[0].NextBlock(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	b, err := stores[7].NextBlock(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if b != a+100 {
		t.Errorf("blocks on two instances start at %d and %d, want %d then %d", a, b, a, a+100)
	}

	// The advisory lock was released: a later open does not wait for it.
	reopen, err := store.OpenPostgres(ctx, pools[1])
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	reopen.Close()
	if err := pools[1].Ping(ctx); err != nil {
		t.Errorf("pool after Close: %v (Close must not close the shared pool)", err)
	}
}

// TestPostgresServerDown stops PostgreSQL under an open store: every call
// fails with an error that is neither ErrNotFound nor ErrCodeTaken (the
// handler answers 503, never 404 or 409), and after a restart nothing
// attempted during the outage is there.
func TestPostgresServerDown(t *testing.T) {
	srv := testenv.StartPostgres(t)
	pool := testPool(t, srv.DSN(), pgpool.Settings{StatementTimeout: 2 * time.Second, ConnectTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := store.OpenPostgres(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	before := link.Link{Code: "before", LongURL: "https://example.com/before", CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	if err := s.Create(ctx, before); err != nil {
		t.Fatal(err)
	}
	firstBlock, err := s.NextBlock(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	// The throwaway server runs with synchronous_commit=off: make what
	// was committed durable before the immediate shutdown.
	if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	down := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, 5*time.Second)
	}
	{
		c, cancel := down()
		if l, err := s.Get(c, "before"); err == nil || errors.Is(err, link.ErrNotFound) {
			t.Errorf("Get(existing) with the server down = %+v, %v, want a connection error", l, err)
		}
		cancel()
	}
	{
		c, cancel := down()
		if _, err := s.Get(c, "unknown"); err == nil || errors.Is(err, link.ErrNotFound) {
			t.Errorf("Get(unknown) with the server down = %v, want a connection error", err)
		}
		cancel()
	}
	{
		c, cancel := down()
		err := s.Create(c, link.Link{Code: "during", LongURL: "https://example.com/during"})
		if err == nil || errors.Is(err, link.ErrCodeTaken) {
			t.Errorf("Create with the server down = %v, want a connection error", err)
		}
		cancel()
	}
	{
		c, cancel := down()
		if err := s.Revoke(c, "before", time.Now()); err == nil || errors.Is(err, link.ErrNotFound) {
			t.Errorf("Revoke with the server down = %v, want a connection error", err)
		}
		cancel()
	}
	{
		c, cancel := down()
		if _, err := s.NextBlock(c, 10); err == nil {
			t.Error("NextBlock with the server down succeeded")
		}
		cancel()
	}

	srv.Start()
	// The pool drops its dead connections on first use; retry briefly.
	var got link.Link
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, cancel := down()
		got, err = s.Get(c, "before")
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("Get(before) after restart: %v", err)
	}
	linktest.AssertLink(t, got, before)
	if l, err := s.Get(ctx, "during"); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Get(during) after restart = %+v, %v, want ErrNotFound (nothing half-written)", l, err)
	}
	if err := s.Create(ctx, link.Link{Code: "during", LongURL: "https://example.com/during"}); err != nil {
		t.Errorf("Create(during) after restart: %v", err)
	}
	// The failed NextBlock reserved nothing, or at worst skipped IDs: the
	// next block never overlaps the first one.
	next, err := s.NextBlock(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if next < firstBlock+10 {
		t.Errorf("NextBlock after restart = %d, overlaps the block [%d, %d)", next, firstBlock, firstBlock+10)
	}
	// The revocation attempted during the outage did not happen.
	if got.RevokedAt != (time.Time{}) {
		t.Errorf("Revoke during the outage took effect: RevokedAt = %v", got.RevokedAt)
	}
}

// TestPostgresMigrationsIdempotent: opening an up-to-date schema applies
// nothing and changes no data.
func TestPostgresMigrationsIdempotent(t *testing.T) {
	pool := testPool(t, testenv.Postgres(t), pgpool.Settings{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.OpenPostgres(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.NextBlock(ctx, 42); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, link.Link{Code: "stay", LongURL: "https://example.com/"}); err != nil {
		t.Fatal(err)
	}
	s2, err := store.OpenPostgres(ctx, pool)
	if err != nil {
		t.Fatalf("second OpenPostgres: %v", err)
	}
	if _, err := s2.Get(ctx, "stay"); err != nil {
		t.Errorf("Get after reopen: %v", err)
	}
	if first, err := s2.NextBlock(ctx, 1); err != nil || first != 43 {
		t.Errorf("NextBlock after reopen = %d, %v, want 43", first, err)
	}
}

// TestPostgresMigrationLockWait: while another session holds the migration
// lock, OpenPostgres waits; given up by its context, it fails without
// leaving the lock behind, and succeeds once the lock is free.
func TestPostgresMigrationLockWait(t *testing.T) {
	pool := testPool(t, testenv.Postgres(t), pgpool.Settings{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, store.MigrationLockKey); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = store.OpenPostgres(short, pool)
	cancelShort()
	if err == nil {
		t.Fatal("OpenPostgres succeeded while another session held the migration lock")
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, store.MigrationLockKey); err != nil {
		t.Fatal(err)
	}
	holder.Release()

	s, err := store.OpenPostgres(ctx, pool)
	if err != nil {
		t.Fatalf("OpenPostgres after the lock was freed: %v", err)
	}
	if _, err := s.NextBlock(ctx, 1); err != nil {
		t.Errorf("NextBlock: %v", err)
	}
	// No session holds or awaits the lock any more (the abandoned wait is
	// canceled server-side, asynchronously: allow it a moment).
	key := store.MigrationLockKey
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objid = $2`,
			uint32(key>>32), uint32(key)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still hold or await the migration lock", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
