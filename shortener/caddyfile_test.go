package shortener

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
)

func parse(input string) (*Handler, error) {
	h := new(Handler)
	err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
	return h, err
}

func TestCaddyfileEmpty(t *testing.T) {
	h, err := parse(`shortener`)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h, new(Handler)) {
		t.Errorf("bare directive set fields: %+v", h)
	}
	h.setDefaults()
	if h.Store != "embedded" || h.Status != 302 || h.CacheControl != "private, max-age=0" ||
		h.LocalCacheEntries != 10000 || time.Duration(h.LocalCacheTTL) != 5*time.Second ||
		time.Duration(h.CacheTTL) != 24*time.Hour || time.Duration(h.NegativeTTL) != time.Minute ||
		h.Codes != "random" || h.CodeLength != 7 || h.BlockSize != 1000 ||
		!reflect.DeepEqual(h.AllowSchemes, []string{"http", "https"}) || h.API != "" {
		t.Errorf("defaults: %+v", h)
	}
}

func TestCaddyfileAll(t *testing.T) {
	h, err := parse(`shortener {
		store postgres "postgres://u:p@db/links?sslmode=disable"
		redis redis://cache:6379/1
		status 301
		cache_control "public, max-age=300"
		local_cache 500 2s
		cache_ttl 1h
		negative_ttl 10s
		codes sequential
		code_length 9
		block_size 50
		base_url https://sho.rt
		allow_schemes https
		deny_hosts evil.example *.phish.test
		deny_hosts more.example
		api /api
		api_key {env.SHORTENER_API_KEY} second-key-0123456789
		api_key third-key-0123456789
		source_header
	}`)
	if err != nil {
		t.Fatal(err)
	}
	want := &Handler{
		Store:             "postgres",
		DSN:               "postgres://u:p@db/links?sslmode=disable",
		Redis:             &redispool.Config{URL: "redis://cache:6379/1"},
		Status:            301,
		CacheControl:      "public, max-age=300",
		LocalCacheEntries: 500,
		LocalCacheTTL:     caddy.Duration(2 * time.Second),
		CacheTTL:          caddy.Duration(time.Hour),
		NegativeTTL:       caddy.Duration(10 * time.Second),
		Codes:             "sequential",
		CodeLength:        9,
		BlockSize:         50,
		BaseURL:           "https://sho.rt",
		AllowSchemes:      []string{"https"},
		DenyHosts:         []string{"evil.example", "*.phish.test", "more.example"},
		API:               "/api",
		APIKeys:           []string{"{env.SHORTENER_API_KEY}", "second-key-0123456789", "third-key-0123456789"},
		SourceHeader:      true,
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", h, want)
	}
}

// api_read_key repeats like api_key, into its own list; an API with read
// keys only loads.
func TestCaddyfileReadKeys(t *testing.T) {
	h, err := parse(`shortener {
		api /api
		api_read_key {env.SHORTENER_READ_KEY} read-two-0123456789
		api_key full-key-0123456789
		api_read_key read-three-0123456789
	}`)
	if err != nil {
		t.Fatal(err)
	}
	want := &Handler{
		API:         "/api",
		APIKeys:     []string{"full-key-0123456789"},
		APIReadKeys: []string{"{env.SHORTENER_READ_KEY}", "read-two-0123456789", "read-three-0123456789"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", h, want)
	}
	if _, err := parse("shortener {\napi /api\napi_read_key read-only-0123456789\n}"); err != nil {
		t.Errorf("an api with read keys only: %v, want it to load", err)
	}
}

func TestCaddyfileStoreAndCacheForms(t *testing.T) {
	for input, want := range map[string]Handler{
		"shortener {\nstore embedded\n}":                   {Store: "embedded"},
		"shortener {\nstore embedded /var/lib/links.db\n}": {Store: "embedded", Path: "/var/lib/links.db"},
		"shortener {\nlocal_cache off\n}":                  {LocalCacheOff: true},
		"shortener {\n redis {\n url redis://r:6379\n key_prefix sl\n }\n}": {
			Redis: &redispool.Config{URL: "redis://r:6379", KeyPrefix: "sl"},
		},
	} {
		h, err := parse(input)
		if err != nil {
			t.Errorf("%s: %v", input, err)
			continue
		}
		if !reflect.DeepEqual(*h, want) {
			t.Errorf("%s: parsed %+v, want %+v", input, *h, want)
		}
	}
}

func TestCaddyfileErrors(t *testing.T) {
	for _, tc := range []struct{ input, want string }{
		{`shortener arg`, "wrong argument count"},
		{"shortener {\nbogus\n}", "unrecognized subdirective 'bogus'"},
		{"shortener {\nstore\n}", "wrong argument count"},
		{"shortener {\nstore mysql dsn\n}", "unknown store 'mysql'"},
		{"shortener {\nstore postgres\n}", "needs a dsn"},
		{"shortener {\nstore postgres a b\n}", "wrong argument count"},
		{"shortener {\nstore embedded a b\n}", "wrong argument count"},
		{"shortener {\n store embedded\n store embedded\n}", "duplicate subdirective 'store'"},
		{"shortener {\nredis\n}", "redis"},
		{"shortener {\nredis a b\n}", "wrong argument count"},
		{"shortener {\nstatus\n}", "wrong argument count"},
		{"shortener {\nstatus abc\n}", "invalid status 'abc'"},
		{"shortener {\nstatus 200\n}", "invalid status '200'"},
		{"shortener {\nstatus 301 302\n}", "wrong argument count"},
		{"shortener {\ncache_control\n}", "wrong argument count"},
		{"shortener {\nlocal_cache\n}", "local_cache takes"},
		{"shortener {\nlocal_cache 10\n}", "local_cache takes"},
		{"shortener {\nlocal_cache on\n}", "local_cache takes"},
		{"shortener {\nlocal_cache x 5s\n}", "invalid local_cache entries 'x'"},
		{"shortener {\nlocal_cache 0 5s\n}", "invalid local_cache entries '0'"},
		{"shortener {\nlocal_cache 10 forever\n}", "invalid local_cache ttl 'forever'"},
		{"shortener {\nlocal_cache 10 -1s\n}", "invalid local_cache ttl '-1s'"},
		{"shortener {\ncache_ttl\n}", "wrong argument count"},
		{"shortener {\ncache_ttl soon\n}", "invalid cache_ttl 'soon'"},
		{"shortener {\ncache_ttl 0s\n}", "invalid cache_ttl '0s'"},
		{"shortener {\nnegative_ttl -5s\n}", "invalid negative_ttl '-5s'"},
		{"shortener {\ncodes\n}", "wrong argument count"},
		{"shortener {\ncodes pretty\n}", "invalid codes 'pretty'"},
		{"shortener {\ncode_length x\n}", "invalid code_length 'x'"},
		{"shortener {\ncode_length 3\n}", "invalid code_length '3'"},
		{"shortener {\ncode_length 33\n}", "invalid code_length '33'"},
		{"shortener {\nblock_size 0\n}", "invalid block_size '0'"},
		{"shortener {\nblock_size 1 2\n}", "wrong argument count"},
		{"shortener {\nbase_url\n}", "wrong argument count"},
		{"shortener {\nallow_schemes\n}", "wrong argument count"},
		{"shortener {\ndeny_hosts\n}", "wrong argument count"},
		{"shortener {\napi\n}", "wrong argument count"},
		{"shortener {\napi api\n}", "invalid api path 'api'"},
		{"shortener {\napi /\n}", "invalid api path '/'"},
		{"shortener {\napi /api\n}", "api needs at least one api_key"},
		{"shortener {\napi_key\n}", "wrong argument count"},
		{"shortener {\napi_key k-0123456789abcdef\n}", "api_key without api"},
		{"shortener {\napi /api\napi_key short\n}", "api_key is 5 bytes long; at least 16"},
		{"shortener {\napi_read_key\n}", "wrong argument count"},
		{"shortener {\napi_read_key k-0123456789abcdef\n}", "api_read_key without api"},
		{"shortener {\napi /api\napi_read_key short\n}", "api_read_key is 5 bytes long; at least 16"},
		{"shortener {\napi /api\napi_key same-0123456789abcdef\napi_read_key other-0123456789abcdef same-0123456789abcdef\n}", "api_read_key #2 is also api_key #1; a key has one scope"},
		{"shortener {\nsource_header yes\n}", "wrong argument count"},
	} {
		_, err := parse(tc.input)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.input, err, tc.want)
		}
	}
}

func TestValidateConfig(t *testing.T) {
	for _, tc := range []struct {
		h    Handler
		want string
	}{
		{Handler{Store: "mysql"}, "unknown store"},
		{Handler{Store: "postgres"}, "needs a dsn"},
		{Handler{Store: "postgres", DSN: "x", Path: "y"}, "path is only valid"},
		{Handler{Store: "embedded", DSN: "x"}, "dsn is only valid"},
		{Handler{Status: 200}, "invalid status"},
		{Handler{Codes: "pretty"}, "invalid codes"},
		{Handler{CodeLength: 2}, "code_length"},
		{Handler{BlockSize: -1}, "block_size"},
		{Handler{API: "/api"}, "api_key"},
		{Handler{APIKeys: []string{"k"}}, "without api"},
		{Handler{APIReadKeys: []string{"k"}}, "api_read_key without api"},
		{Handler{API: "/api", APIReadKeys: []string{"{env.K}", "short"}}, "api_read_key is 5 bytes long"},
		{Handler{API: "/api", APIKeys: []string{"{env.K}"}, APIReadKeys: []string{"{env.K}"}}, "is also api_key #1"},
		{Handler{BaseURL: "sho.rt"}, "base_url"},
		{Handler{BaseURL: "ftp://sho.rt"}, "base_url"},
	} {
		err := tc.h.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", tc.h, err, tc.want)
		}
	}
}

var updateGolden = flag.Bool("update", false, "rewrite testdata/caddyfile/*.json from the current adapter output")

// TestCaddyfileGolden adapts whole Caddyfiles and compares the JSON with
// testdata/caddyfile/<name>.json (go test -run Golden -update rewrites them).
func TestCaddyfileGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/caddyfile/*.Caddyfile")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt(in, map[string]any{"filename": f})
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) > 0 {
				t.Errorf("warnings: %v", warnings)
			}
			var buf bytes.Buffer
			if err := json.Indent(&buf, out, "", "\t"); err != nil {
				t.Fatal(err)
			}
			buf.WriteByte('\n')
			golden := strings.TrimSuffix(f, ".Caddyfile") + ".json"
			if *updateGolden {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("adapted %s differs from %s:\n%s", f, golden, buf.String())
			}
		})
	}
}
