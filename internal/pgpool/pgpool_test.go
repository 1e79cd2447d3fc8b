package pgpool

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

func TestPoolSharedAndTimeouts(t *testing.T) {
	dsn := testenv.Postgres(t)
	p1, err := Get(dsn, Settings{StatementTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := Get(dsn, Settings{StatementTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if p1.Pool != p2.Pool {
		t.Fatal("same DSN and settings gave two pools")
	}
	ctx := context.Background()
	if err := Ping(ctx, p1, dsn, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	var app string
	if err := p1.QueryRow(ctx, "SHOW application_name").Scan(&app); err != nil || app != "caddy-edgekit" {
		t.Errorf("application_name = %q, %v", app, err)
	}
	if _, err := p1.Exec(ctx, "SELECT pg_sleep(2)"); err == nil || !strings.Contains(err.Error(), "statement timeout") {
		t.Errorf("pg_sleep(2) with a 200ms statement_timeout: %v", err)
	}
	p1.Release()
	if err := p2.Ping(ctx); err != nil {
		t.Fatalf("pool closed while still referenced: %v", err)
	}
	p2.Release()
}

func TestErrorsHidePassword(t *testing.T) {
	port := testenv.FreePort(t)
	dsn := "postgres://app:supersecret@127.0.0.1:" + strconv.Itoa(port) + "/db?connect_timeout=1"
	p, err := Get(dsn, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	err = Ping(context.Background(), p, dsn, time.Second)
	if err == nil {
		t.Fatal("Ping of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "supersecret") {
		t.Errorf("error leaks the password: %v", err)
	}
	if _, err := Get("postgres://a:supersecret@host:notaport/db", Settings{}); err == nil || strings.Contains(err.Error(), "supersecret") {
		t.Errorf("bad DSN error = %v", err)
	}
}
