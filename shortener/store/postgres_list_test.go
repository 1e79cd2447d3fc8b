package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestPostgresMigrationNeedsTrgm: on a database without pg_trgm, a role
// that may not create it fails the migration with an error naming
// pg_trgm and what to run; once the owner has created it, the same role
// migrates.
func TestPostgresMigrationNeedsTrgm(t *testing.T) {
	srv := testenv.StartPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, q := range []string{
		`CREATE ROLE linker LOGIN`,
		`CREATE DATABASE links OWNER postgres`,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dsn := strings.Replace(strings.Replace(srv.DSN(), "postgres@", "linker@", 1), "/postgres?", "/links?", 1)
	setup, err := pgx.Connect(ctx, strings.Replace(srv.DSN(), "/postgres?", "/links?", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close(ctx)
	// The role owns its schema but may not create extensions in the database.
	if _, err := setup.Exec(ctx, `CREATE SCHEMA linker AUTHORIZATION linker; REVOKE CREATE ON DATABASE links FROM PUBLIC`); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = OpenPostgres(ctx, pool)
	if err == nil || !strings.Contains(err.Error(), "run CREATE EXTENSION pg_trgm; in this database as its owner") {
		t.Fatalf("OpenPostgres without pg_trgm = %v, want an error naming pg_trgm and what to run", err)
	}
	t.Logf("error: %v", err)
	if _, err := setup.Exec(ctx, `CREATE EXTENSION pg_trgm SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenPostgres(ctx, pool); err != nil {
		t.Fatalf("OpenPostgres once the owner created pg_trgm: %v", err)
	}
}
