package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrations: numbered files migrations/NNN_name.up.sql, applied in order,
// each in its own transaction that also records its version in
// shortener_schema_migrations. New schema (clicks, ...) comes as a new
// file with the next number; applied files are never edited.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// MigrationLockKey is the pg_advisory_lock key held while migrating: the
// bytes "edgekit" + 's' (shortener). Advisory locks are per database, so
// instances on different schemas of one database merely take turns.
const MigrationLockKey int64 = 0x65646765_6b697473

type migration struct {
	Version int
	Name    string
	Sql     string
}

var migrationName = regexp.MustCompile(`^([0-9]+)_([a-z0-9_]+)\.up\.sql$`)

// LoadMigrations returns the embedded migrations by version, numbered from
// 1 without gaps.
func LoadMigrations() ([]migration, error) {
	entries, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, p := range entries {
		m := migrationName.FindStringSubmatch(path.Base(p))
		if m == nil {
			return nil, fmt.Errorf("migration file %s: name is not NNN_name.up.sql", p)
		}
		v, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("migration file %s: %w", p, err)
		}
		b, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{Version: v, Name: m[2], Sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %03d_%s: want version %d (versions must run 1, 2, 3, ...)", m.Version, m.Name, i+1)
		}
	}
	return ms, nil
}

// migrate applies the pending migrations while holding the advisory lock
// on one dedicated connection, so concurrent instances apply each exactly
// once and wait for one another. The wait, like each migration statement,
// is bounded by ctx and by the pool's statement_timeout.
func migrate(ctx context.Context, pool *pgxpool.Pool) (err error) {
	ms, err := LoadMigrations()
	if err != nil {
		return fmt.Errorf("loading migrations: %w", err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, MigrationLockKey); err != nil {
		// Given up by ctx, the session may still be waiting for the lock
		// (or have just got it): cancel the wait and end the session
		// rather than pool it with the lock held or pending.
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Conn().PgConn().CancelRequest(cctx)
		_ = conn.Conn().Close(cctx)
		return fmt.Errorf("taking the migration lock: %w", err)
	}
	defer func() {
		// Unlock even if ctx is done; a connection that cannot unlock is
		// closed (ending its session frees the lock), not returned to the pool.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, uerr := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, MigrationLockKey); uerr != nil {
			_ = conn.Conn().Close(uctx)
			if err == nil {
				err = fmt.Errorf("releasing the migration lock: %w", uerr)
			}
		}
	}()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS shortener_schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("creating shortener_schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	rows, err := conn.Query(ctx, `SELECT version FROM shortener_schema_migrations`)
	if err != nil {
		return fmt.Errorf("reading shortener_schema_migrations: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("reading shortener_schema_migrations: %w", err)
	}
	for _, v := range versions {
		applied[int(v)] = true
	}
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		if err := applyMigration(ctx, conn.Conn(), m); err != nil {
			return fmt.Errorf("migration %03d_%s: %w", m.Version, m.Name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m migration) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	// Without arguments, Exec uses the simple protocol: a file may hold
	// several statements.
	if _, err := tx.Exec(ctx, m.Sql); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO shortener_schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
