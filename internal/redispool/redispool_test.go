package redispool

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

func TestUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    Config
		wantErr string
	}{
		{name: "url", input: `redis redis://localhost:6379/2`, want: Config{URL: "redis://localhost:6379/2"}},
		{name: "block", input: `redis {
			addresses 10.0.0.1:7000 10.0.0.2:7000 10.0.0.3:7000
			username app
			password {env.REDIS_PASSWORD}
			tls
			pool_size 50
			min_idle_conns 4
			dial_timeout 2s
			read_timeout 100ms
			write_timeout 100ms
			key_prefix rl
		}`, want: Config{
			Addresses: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"},
			Username:  "app", Password: "{env.REDIS_PASSWORD}", TLS: true, PoolSize: 50, MinIdleConns: 4,
			DialTimeout: caddy.Duration(2 * time.Second), ReadTimeout: caddy.Duration(100 * time.Millisecond),
			WriteTimeout: caddy.Duration(100 * time.Millisecond), KeyPrefix: "rl",
		}},
		{name: "sentinel", input: `redis {
			addresses s1:26379 s2:26379 s3:26379
			master_name mymaster
			db 3
		}`, want: Config{Addresses: []string{"s1:26379", "s2:26379", "s3:26379"}, MasterName: "mymaster", DB: 3}},
		{name: "cluster flag", input: `redis {
			url redis://seed:7000
			cluster
		}`, want: Config{URL: "redis://seed:7000", Cluster: true}},
		{name: "url and block", input: "redis redis://x {\nkey_prefix p\n}", wantErr: "either a url argument or a block"},
		{name: "two args", input: `redis redis://a redis://b`, wantErr: "wrong argument count"},
		{name: "empty block", input: "redis {\n}", wantErr: "needs 'url' or 'addresses'"},
		{name: "no args", input: `redis`, wantErr: "needs 'url' or 'addresses'"},
		{name: "unknown", input: "redis {\nurl redis://x\nfoo bar\n}", wantErr: "unrecognized redis subdirective 'foo'"},
		{name: "duplicate", input: "redis {\nurl redis://x\nurl redis://y\n}", wantErr: "duplicate redis subdirective 'url'"},
		{name: "bad db", input: "redis {\nurl redis://x\ndb -1\n}", wantErr: "invalid db '-1'"},
		{name: "bad pool", input: "redis {\nurl redis://x\npool_size many\n}", wantErr: "invalid pool_size 'many'"},
		{name: "min idle zero", input: "redis {\nurl redis://x\nmin_idle_conns 0\n}", wantErr: "invalid min_idle_conns '0': must be 1 to 1000, at Testfile:3"},
		{name: "min idle past bound", input: "redis {\nurl redis://x\nmin_idle_conns 1001\n}", wantErr: "invalid min_idle_conns '1001': must be 1 to 1000"},
		{name: "min idle past pool", input: "redis {\nurl redis://x\npool_size 4\nmin_idle_conns 5\n}", wantErr: "invalid min_idle_conns '5': must be at most pool_size (4)"},
		{name: "bad timeout", input: "redis {\nurl redis://x\nread_timeout soon\n}", wantErr: "invalid read_timeout 'soon'"},
		{name: "tls arg", input: "redis {\nurl redis://x\ntls yes\n}", wantErr: "wrong argument count"},
		{name: "addresses none", input: "redis {\naddresses\n}", wantErr: "wrong argument count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := caddyfile.NewTestDispenser(tt.input)
			d.Next()
			var c Config
			err := c.UnmarshalCaddyfile(d)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Key() != tt.want.Key() || c.KeyPrefix != tt.want.KeyPrefix {
				t.Errorf("got %+v, want %+v", c, tt.want)
			}
		})
	}
}

func TestValidateAndOptions(t *testing.T) {
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "a url or at least one address"},
		{Config{URL: "redis://x", Addresses: []string{"y:1"}}, "either url or addresses"},
		{Config{URL: "http://x"}, "unsupported url scheme"},
		{Config{Addresses: []string{"a:1", "b:1"}, DB: 2}, "db must be 0"},
		{Config{URL: "redis://:s3cret@host:6379/notanumber"}, "invalid url"},
	}
	for _, tt := range bad {
		err := tt.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
	opts, err := Config{URL: "rediss://user:pw@host:6380/4"}.Options()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Addrs[0] != "host:6380" || opts.Username != "user" || opts.Password != "pw" || opts.DB != 4 || opts.TLSConfig == nil {
		t.Errorf("Options() = %+v", opts)
	}
	if opts.DialTimeout != DefaultDialTimeout || opts.ReadTimeout != DefaultReadTimeout {
		t.Errorf("default timeouts not applied: %v %v", opts.DialTimeout, opts.ReadTimeout)
	}
	if got := Redact("redis://user:pw@host:6379/0"); strings.Contains(got, "pw@") {
		t.Errorf("Redact leaks password: %s", got)
	}
}

func TestExpandEnv(t *testing.T) {
	t.Setenv("EDGEKIT_TEST_REDIS_PW", "hunter2")
	c := Config{URL: "redis://localhost:6379", Password: "{env.EDGEKIT_TEST_REDIS_PW}"}.Expand()
	if c.Password != "hunter2" {
		t.Errorf("Password = %q, want expanded", c.Password)
	}
	if strings.Contains(c.Describe(), "hunter2") {
		t.Errorf("Describe leaks password: %s", c.Describe())
	}
}

func TestPoolSharesClients(t *testing.T) {
	url := testenv.RedisURL(t)
	cfg := Config{URL: url, KeyPrefix: "a"}
	c1, err := Get(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg2 := cfg
	cfg2.KeyPrefix = "b" // same connection, other module prefix
	c2, err := Get(cfg2)
	if err != nil {
		t.Fatal(err)
	}
	if c1.UniversalClient != c2.UniversalClient {
		t.Fatal("same connection config gave two clients")
	}
	if err := Ping(context.Background(), c1, cfg, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c1.Release(); err != nil {
		t.Fatal(err)
	}
	// still usable by the second holder (a config reload in progress)
	if err := c2.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("client closed while still referenced: %v", err)
	}
	if err := c2.Release(); err != nil {
		t.Fatal(err)
	}
	if err := c2.UniversalClient.Ping(context.Background()).Err(); err != redis.ErrClosed {
		t.Errorf("after the last release Ping = %v, want %v", err, redis.ErrClosed)
	}
}

func TestPingErrorHidesPassword(t *testing.T) {
	stall := testenv.StartStall(t)
	cfg := Config{Addresses: []string{stall.Addr()}, Password: "topsecret"}
	c, err := Get(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	start := time.Now()
	err = Ping(context.Background(), c, cfg, 100*time.Millisecond)
	if err == nil {
		t.Fatal("Ping of a stalled server succeeded")
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("Ping took %v with a 100ms timeout", time.Since(start))
	}
	if strings.Contains(err.Error(), "topsecret") {
		t.Errorf("error leaks the password: %v", err)
	}
}

func TestClusterClient(t *testing.T) {
	addrs := testenv.RedisClusterAddrs(t)
	cfg := Config{Addresses: addrs}
	c, err := Get(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if _, ok := c.UniversalClient.(*redis.ClusterClient); !ok {
		t.Fatalf("several addresses gave %T, want *redis.ClusterClient", c.UniversalClient)
	}
	if err := Ping(context.Background(), c, cfg, 2*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A URL that does not parse must not show its password, whatever bytes the
// password holds: url.Parse quotes the URL in its error, escaping `"`, `\`
// and control characters, so a plain search-and-replace misses it.
func TestInvalidURLNeverShowsPassword(t *testing.T) {
	for _, pw := range []string{`se"cret`, `se\cret`, "se\x01cret", "se\ncret", "se\x7fcret", `se%zzcret`, "se cret", "sécret\u202e", `se/cr@et`} {
		for _, raw := range []string{
			"redis://user:" + pw + "@host:6379/0",
			"redis://:" + pw + "@host:6379",
			"rediss://user:" + pw + "@host:notaport/0",
			"redis://user:" + pw + "@host:6379/notadb",
		} {
			cfg := Config{URL: raw}
			var msgs []string
			if err := cfg.Validate(); err != nil {
				msgs = append(msgs, err.Error())
			}
			if _, err := cfg.Options(); err != nil {
				msgs = append(msgs, err.Error())
			}
			msgs = append(msgs, cfg.Describe(), Redact(raw))
			for _, m := range msgs {
				for _, leak := range []string{"cret", "cr@et"} {
					if strings.Contains(m, leak) {
						t.Errorf("url with password %q: message shows it: %s", pw, m)
					}
				}
			}
		}
	}
}
