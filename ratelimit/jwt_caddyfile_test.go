package ratelimit

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

func TestCaddyfileJWT(t *testing.T) {
	h, err := parse(t, `ratelimit {
		zone api {
			key {http.ratelimit.jwt.sub}:{http.ratelimit.jwt.claim.tenant}
			events 10
			window 1m
		}
		jwt {
			jwks_url   https://login.example.com/jwks.json
			secret     {env.JWT_SECRET}
			refresh    10m
			issuer     https://login.example.com/
			audience   api https://api.example.com
			leeway     0s
			algorithms RS256 ES256 HS256
			header     X-Token
			on_invalid client
		}
	}`)
	if err != nil {
		t.Fatal(err)
	}
	zero := caddy.Duration(0)
	want := &JWTKey{JWKSURL: "https://login.example.com/jwks.json", Secret: "{env.JWT_SECRET}",
		Refresh: caddy.Duration(10 * time.Minute), Issuer: "https://login.example.com/",
		Audience: []string{"api", "https://api.example.com"}, Leeway: &zero,
		Algorithms: []string{"RS256", "ES256", "HS256"}, Header: "X-Token", OnInvalid: "client"}
	got, _ := json.Marshal(h.JWT)
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Errorf("jwt = %s\nwant  %s", got, wantJSON)
	}
	for _, field := range []string{`"jwks_url"`, `"secret"`, `"refresh"`, `"issuer"`, `"audience"`, `"leeway":0`, `"algorithms"`, `"header"`, `"on_invalid"`} {
		if !strings.Contains(string(got), field) {
			t.Errorf("JSON %s lacks %s", got, field)
		}
	}
}

// Each refusal names the problem and the line of the value at fault.
func TestCaddyfileJWTRefused(t *testing.T) {
	const zone = "zone api {\nkey {http.ratelimit.jwt.sub}\nevents 5\nwindow 1m\n}\n" // lines 2-6
	for _, c := range []struct {
		name, body, want string
		line             int
	}{
		{"no source", zone + "jwt {\nissuer x\n}", "one of jwks_file, jwks_url or secret is required", 9},
		{"unknown subdirective", zone + "jwt {\njwks_file a\nkid x\n}", "jwt: unrecognized subdirective 'kid'", 9},
		{"duplicate", zone + "jwt {\njwks_file a\njwks_file b\n}", "jwt: duplicate subdirective 'jwks_file'", 9},
		{"jwt twice", zone + "jwt {\njwks_file a\n}\njwt {\njwks_file b\n}", "duplicate subdirective 'jwt'", 10},
		{"argument", zone + "jwt x {\njwks_file a\n}", "wrong argument count", 7},
		{"on_invalid", zone + "jwt {\njwks_file a\non_invalid allow\n}", "invalid on_invalid 'allow': must be refuse or client", 9},
		{"alg none", zone + "jwt {\njwks_file a\nalgorithms RS256 none\n}", "invalid algorithm 'none'", 9},
		{"unknown alg", zone + "jwt {\njwks_file a\nalgorithms RS257\n}", "unknown algorithm 'RS257'", 9},
		{"HS256 without secret", zone + "jwt {\njwks_file a\nalgorithms HS256\n}", "HS256 needs a secret", 9},
		{"http url", zone + "jwt {\njwks_url http://idp/jwks\n}", "must be an https:// URL", 8},
		{"file and url", zone + "jwt {\njwks_file a\njwks_url https://idp/jwks\n}", "use one", 9},
		{"short secret", zone + "jwt {\nsecret tooshort\n}", "must be at least 32", 8},
		{"leeway", zone + "jwt {\njwks_file a\nleeway 6m\n}", "invalid leeway 6m0s: must be 0-5m0s", 9},
		{"refresh", zone + "jwt {\njwks_file a\nrefresh 500ms\n}", "invalid refresh 500ms: must be at least 1s", 9},
		{"refresh not a duration", zone + "jwt {\njwks_file a\nrefresh soon\n}", "invalid refresh 'soon'", 9},
		{"header", zone + "jwt {\njwks_file a\nheader X:Token\n}", "invalid header 'X:Token'", 9},
		{"unread", "zone api {\nkey k\nevents 5\nwindow 1m\n}\njwt {\njwks_file a\n}", "jwt: no key, cost, hash_tag, plan_key or quota template reads", 7},
		{"no jwt block", zone, "the jwt block that verifies the token is required", 3},
		{"unknown placeholder", "zone api {\nkey {http.ratelimit.jwt.subject}\nevents 5\nwindow 1m\n}\njwt {\njwks_file a\n}", "unknown placeholder {http.ratelimit.jwt.subject}", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := "ratelimit {\n" + c.body + "\n}"
			_, err := parse(t, in)
			if err == nil {
				t.Fatalf("accepted:\n%s", in)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want %q", err, c.want)
			}
			if !strings.Contains(err.Error(), "Testfile:"+strconv.Itoa(c.line)) {
				t.Errorf("error %q, want line %d", err, c.line)
			}
		})
	}
}

// JSON is judged by the same rules at load.
func TestJSONJWT(t *testing.T) {
	var h Handler
	raw := `{"zones":[{"name":"api","key":"{http.ratelimit.jwt.sub}","events":5,"window":"1m"}],
		"jwt":{"jwks_file":"a","algorithms":["none"]}}`
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		t.Fatal(err)
	}
	if err := h.validate(); err == nil || !strings.Contains(err.Error(), "invalid algorithm 'none'") {
		t.Errorf("validate = %v", err)
	}
}
