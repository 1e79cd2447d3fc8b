package shortener

import (
	"encoding/json"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// FuzzUnmarshalCaddyfile: no input panics the parser; a handler it accepts
// survives Validate and a JSON round trip (what Caddy does with it).
func FuzzUnmarshalCaddyfile(f *testing.F) {
	for _, seed := range []string{
		"shortener",
		"shortener {\n store postgres {env.DATABASE_URL}\n redis redis://127.0.0.1:6379/0\n status 301\n cache_control \"public, max-age=60\"\n local_cache 100 1s\n cache_ttl 1h\n negative_ttl 10s\n codes sequential\n code_length 8\n block_size 50\n base_url https://sho.rt\n allow_schemes https\n deny_hosts evil.com *.evil.com\n api /api\n api_key k1-0123456789abcdef {env.K2}\n source_header\n}",
		"shortener /s/* {\n store embedded /tmp/x.db\n local_cache off\n}",
		"shortener {\n store nope\n status 200\n code_length 1000\n block_size -1\n local_cache a b c\n}",
		"shortener {\n redis {\n addresses a:1 b:2\n cluster\n }\n api\n api_key\n}",
		"shortener {\n store postgres\n}",
		"shortener {\n cache_ttl x\n negative_ttl -1s\n base_url ::\n}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		h := new(Handler)
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil {
			return
		}
		_ = h.Validate()
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatalf("accepted config does not marshal: %v", err)
		}
		var back Handler
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("accepted config does not unmarshal: %v\n%s", err, b)
		}
	})
}
