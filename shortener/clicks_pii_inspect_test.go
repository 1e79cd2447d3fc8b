package shortener

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// How TestNoPersonalDataStored runs Caddy and reads back everything the
// stores hold.

var piiClient = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// startPIICaddy loads a Caddy whose server trusts the loopback proxy's
// X-Forwarded-For, with a shortener on store (a Caddyfile line) and Redis
// under prefix; stop loads a config without it, so the handler closes the
// store. It returns the base URL and the API key.
func startPIICaddy(t *testing.T, store, prefix string) (base, key string, stop func()) {
	admin, port, httpsPort := testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)
	key = "pii-test-key-0123456789"
	global := fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	https_port %d
	auto_https off
	skip_install_trust
	servers {
		trusted_proxies static 127.0.0.1/32 ::1/128
	}
}
`, admin, port, httpsPort)
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
		AdminPort:          admin,
		LoadRequestTimeout: 20 * time.Second,
		TestRequestTimeout: 10 * time.Second,
	})
	tester.InitServer(global+fmt.Sprintf(`
http://localhost:%d {
	shortener {
		%s
		redis {
			url %s
			key_prefix %s
		}
		api /api
		api_key %s
		clicks on
		clicks_batch 100 50ms
	}
}
`, port, store, testenv.RedisURL(t), prefix, key), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			tester.InitServer(global+fmt.Sprintf("\nhttp://localhost:%d {\n\trespond \"off\"\n}\n", port), "caddyfile")
		})
	}
	t.Cleanup(stop)
	return fmt.Sprintf("http://localhost:%d", port), key, stop
}

// followStream reads every entry appended to stream from now on (XREAD,
// outside the consumer group, so the consumer is not disturbed) until the
// returned function is called; it returns each entry's ID and fields.
func followStream(t *testing.T, rdb *redis.Client, stream string) func() []string {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var seen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := "0"
		for ctx.Err() == nil {
			res, err := rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{stream, last}, Block: 100 * time.Millisecond}).Result()
			if err != nil {
				continue // redis.Nil: nothing new yet
			}
			mu.Lock()
			for _, s := range res {
				for _, m := range s.Messages {
					seen = append(seen, fmt.Sprint(m.ID, m.Values))
					last = m.ID
				}
			}
			mu.Unlock()
		}
	}()
	var once sync.Once
	stop := func() []string {
		once.Do(func() {
			cancel()
			<-done
		})
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	t.Cleanup(func() { stop() })
	return stop
}

// inspectRedis checks every key under prefix (its name and its whole
// value, whatever its type) and the click stream's groups and consumers;
// it returns how many keys it read.
func inspectRedis(t *testing.T, rdb *redis.Client, prefix string, n piiNeedles) int {
	ctx := t.Context()
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		n.check(t, "redis key name", []byte(k))
		typ, err := rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		switch typ {
		case "string":
			v, err = rdb.Get(ctx, k).Result()
		case "hash":
			v, err = rdb.HGetAll(ctx, k).Result()
		case "list":
			v, err = rdb.LRange(ctx, k, 0, -1).Result()
		case "set":
			v, err = rdb.SMembers(ctx, k).Result()
		case "zset":
			v, err = rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "stream":
			var groups []redis.XInfoGroup
			if v, err = rdb.XRange(ctx, k, "-", "+").Result(); err == nil {
				groups, err = rdb.XInfoGroups(ctx, k).Result()
			}
			for _, g := range groups {
				cs, err := rdb.XInfoConsumers(ctx, k, g.Name).Result()
				if err != nil {
					t.Fatal(err)
				}
				n.check(t, "redis stream group "+k, []byte(fmt.Sprint(g, cs)))
			}
		default:
			t.Errorf("redis key %s of type %s: not inspected", k, typ)
		}
		if err != nil {
			t.Fatalf("reading %s (%s): %v", k, typ, err)
		}
		n.check(t, fmt.Sprintf("redis %s %s", typ, k), []byte(fmt.Sprint(v)))
	}
	return len(keys)
}

// inspectPostgres checks every column of every row of every table in the
// test's schema (bytea as its bytes, anything else as its text); it returns
// how many values it read.
func inspectPostgres(t *testing.T, dsn string, n piiNeedles) int {
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT c.Table_name, c.column_name, c.data_type FROM information_schema.columns c
		JOIN information_schema.tables t USING (table_schema, table_name)
		WHERE c.Table_schema = current_schema() AND t.table_type = 'BASE TABLE' ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	type column struct{ Table, Name, Typ string }
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByPos[column])
	if err != nil || len(cols) == 0 {
		t.Fatalf("columns of the schema: %d, %v", len(cols), err)
	}
	values, tables := 0, map[string]bool{}
	for _, c := range cols {
		tables[c.Table] = true
		expr := pgx.Identifier{c.Name}.Sanitize()
		if c.Typ != "bytea" {
			expr += "::text"
		}
		rows, err := conn.Query(ctx, "SELECT "+expr+" FROM "+pgx.Identifier{c.Table}.Sanitize())
		if err != nil {
			t.Fatal(err)
		}
		var v []byte
		_, err = pgx.ForEachRow(rows, []any{&v}, func() error {
			values++
			n.check(t, "postgres "+c.Table+"."+c.Name, v)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("postgres: %d tables, %d columns", len(tables), len(cols))
	return values
}

// inspectBolt checks every bucket name, key and value of the embedded file
// (nested buckets too), then the file's raw bytes, free pages included;
// it returns how many values it read.
func inspectBolt(t *testing.T, path string, n piiNeedles) int {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	values, buckets := 0, 0
	var walk func(where string, b *bbolt.Bucket) error
	walk = func(where string, b *bbolt.Bucket) error {
		buckets++
		return b.ForEach(func(k, v []byte) error {
			n.check(t, "bbolt key in "+where, k)
			if v == nil {
				n.check(t, "bbolt bucket name in "+where, k)
				return walk(where+"/"+string(k), b.Bucket(k))
			}
			values++
			n.check(t, fmt.Sprintf("bbolt %s[%q]", where, k), v)
			return nil
		})
	}
	err = db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			n.check(t, "bbolt bucket name", name)
			return walk(string(name), b)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n.check(t, "the embedded file's bytes", raw)
	t.Logf("bbolt: %d buckets, %d values, file %d bytes", buckets, values, len(raw))
	return values
}
