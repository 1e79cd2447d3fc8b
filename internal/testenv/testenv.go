// Package testenv gives tests real services: the shared Redis, Redis Cluster
// and PostgreSQL named by TEST_REDIS_URL, TEST_REDIS_CLUSTER and
// TEST_DATABASE_URL (set by scripts/test.sh), each isolated per test with a
// random key prefix or a fresh schema, and throwaway servers for tests that
// stop, restart or stall one.
//
// Under CI=true a missing service fails the test; elsewhere it skips.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Unavailable fails (CI=true) or skips the test for a missing service.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("service unavailable under CI=true: %s", msg)
	}
	t.Skipf("service unavailable (run make test to start one): %s", msg)
}

// RandomID returns n random bytes as hex: prefixes, schema names.
func RandomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RedisURL returns the shared test Redis URL: TEST_REDIS_URL, or
// redis://127.0.0.1:6379 when it answers.
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TEST_REDIS_URL")
	if u == "" {
		u = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("TEST_REDIS_URL: %v", err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		Unavailable(t, "redis at %s: %v", opts.Addr, err)
	}
	return u
}

// RedisAddr is RedisURL's host:port.
func RedisAddr(t testing.TB) string {
	t.Helper()
	opts, _ := redis.ParseURL(RedisURL(t))
	return opts.Addr
}

// Redis returns a client of the shared test Redis and a random key prefix
// for this test; keys under the prefix are deleted when the test ends.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opts, _ := redis.ParseURL(RedisURL(t))
	c := redis.NewClient(opts)
	prefix := "edgekit-test-" + RandomID(6)
	t.Cleanup(func() {
		DeletePrefix(c, prefix)
		c.Close()
	})
	return c, prefix
}

// DeletePrefix removes every key starting with prefix (on every master of a
// cluster client).
func DeletePrefix(c redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del := func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for it.Next(ctx) {
			n.Del(ctx, it.Val())
		}
		return it.Err()
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return del(ctx, n) })
		return
	}
	_ = del(ctx, c)
}

// RedisClusterAddrs returns the seed addresses of the test Redis Cluster
// (TEST_REDIS_CLUSTER, comma separated).
func RedisClusterAddrs(t testing.TB) []string {
	t.Helper()
	v := os.Getenv("TEST_REDIS_CLUSTER")
	if v == "" {
		Unavailable(t, "no Redis Cluster: TEST_REDIS_CLUSTER is not set")
	}
	addrs := strings.Split(v, ",")
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() }); err != nil {
		Unavailable(t, "redis cluster at %s: %v", v, err)
	}
	return addrs
}

// RedisCluster returns a cluster client and a random key prefix, cleaned up
// when the test ends.
func RedisCluster(t testing.TB) (*redis.ClusterClient, string) {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: RedisClusterAddrs(t)})
	prefix := "edgekit-test-" + RandomID(6)
	t.Cleanup(func() {
		DeletePrefix(c, prefix)
		c.Close()
	})
	return c, prefix
}

// DatabaseURL returns the shared test PostgreSQL: TEST_DATABASE_URL, or
// postgres://postgres@127.0.0.1:5432/test when it answers.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("TEST_DATABASE_URL")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		Unavailable(t, "postgres: %v", err)
	}
	conn.Close(ctx)
	return dsn
}

// Postgres creates a fresh schema in the test database and returns a DSN
// whose search_path is that schema; the schema is dropped when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	base := DatabaseURL(t)
	schema := "edgekit_test_" + RandomID(6)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		Unavailable(t, "postgres: %v", err)
	}
	defer conn.Close(ctx)
	// The shortener's migrations create pg_trgm where it is missing, in
	// the migrating schema; dropping that schema at the end of a test would
	// drop the extension with the indexes of every other test's schema.
	// Installed once in public, it is found and left alone. Errors (a
	// concurrent create, no public schema) leave it to the migration.
	_, _ = conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	return WithSearchPath(base, schema)
}

// WithSearchPath adds search_path=<schema> to a URL-form DSN.
func WithSearchPath(dsn, schema string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return dsn + " search_path=" + schema
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	givenMu.Lock()
	defer givenMu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !given[port] { // the kernel may offer a port just closed again
			given[port] = true
			return port
		}
	}
}

// given holds the ports FreePort returned: never twice in one process, so
// that two picked one after the other (a site's HTTP and HTTPS ports)
// differ.
var (
	givenMu sync.Mutex
	given   = map[int]bool{}
)
