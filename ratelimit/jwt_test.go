package ratelimit

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	jose "github.com/go-jose/go-jose/v4"
	dto "github.com/prometheus/client_model/go"
)

// Tokens of the three key types key by their subject: one quota per sub,
// whichever key signed the token.
func TestJWTKeysBySub(t *testing.T) {
	k := testJWTKeys(t)
	h := jwtHandler(t, k, "", subZone("api", 3, time.Hour))
	provision(t, h)
	next := new(statusHandler)
	for i, tok := range []string{
		k.rs256(t, jwtClaims("alice", nil)),
		signJWT(t, jose.ES256, k.ec, "ec1", jwtClaims("alice", nil)),
		signJWT(t, jose.EdDSA, k.ed, "ed1", jwtClaims("alice", nil)),
	} {
		res := do(h, next, get("/", bearer(tok)...))
		if res.status != http.StatusOK {
			t.Fatalf("token %d: %d, want 200 (%v)", i, res.status, res.err)
		}
		if got, _ := res.repl.GetString("http.ratelimit.jwt.sub"); got != "alice" {
			t.Errorf("token %d: {http.ratelimit.jwt.sub} = %q, want alice", i, got)
		}
	}
	if res := do(h, next, get("/", bearer(k.rs256(t, jwtClaims("alice", nil)))...)); res.status != http.StatusTooManyRequests {
		t.Errorf("alice's fourth token: %d, want 429", res.status)
	}
	if res := do(h, next, get("/", bearer(k.rs256(t, jwtClaims("bob", nil)))...)); res.status != http.StatusOK {
		t.Errorf("bob: %d, want 200", res.status)
	}
}

// badTokens are the tokens a jwt key source refuses, with whether the
// request counts as carrying none (missing) and the headers sending them.
func badTokens(t *testing.T, k *jwtTestKeys) []struct {
	name    string
	headers []string
	missing bool
} {
	enc := base64.RawURLEncoding.EncodeToString
	payload, _ := json.Marshal(jwtClaims("alice", nil))
	valid := strings.Split(k.rs256(t, jwtClaims("alice", nil)), ".")
	forged := strings.Split(k.rs256(t, jwtClaims("mallory", nil)), ".")
	return []struct {
		name    string
		headers []string
		missing bool
	}{
		{"no token", nil, true},
		{"another scheme", []string{"Authorization", "Basic YWxpY2U6cHc="}, true},
		{"expired", bearer(k.rs256(t, jwtClaims("alice", map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}))), false},
		{"wrong audience", bearer(k.rs256(t, jwtClaims("alice", map[string]any{"aud": "https://other.example"}))), false},
		{"alg none", bearer(enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(payload) + "."), false},
		{"unknown kid", bearer(signJWT(t, jose.RS256, k.other, "rsa9", jwtClaims("alice", nil))), false},
		{"HMAC with the public key", bearer(signJWT(t, jose.HS256, k.publicPEM(t), "rsa1", jwtClaims("alice", nil))), false},
		{"tampered payload", bearer(valid[0] + "." + forged[1] + "." + valid[2]), false},
		{"garbage", bearer("not.a.token"), false},
	}
}

// Under on_invalid refuse, each bad token answers 401 with its RFC 6750
// challenge, before any store call and without the next handler.
func TestJWTRefuse(t *testing.T) {
	k := testJWTKeys(t)
	h := jwtHandler(t, k, "refuse", subZone("api", 100, time.Hour))
	store := new(failingStore)
	h.store = store
	provision(t, h)
	next := new(statusHandler)
	for _, tt := range badTokens(t, k) {
		t.Run(tt.name, func(t *testing.T) {
			res := do(h, next, get("/", tt.headers...))
			want := `Bearer error="invalid_token"`
			if tt.missing {
				want = "Bearer"
			}
			if res.status != http.StatusUnauthorized || res.header.Get("WWW-Authenticate") != want {
				t.Errorf("%d WWW-Authenticate %q, want 401 %q", res.status, res.header.Get("WWW-Authenticate"), want)
			}
		})
	}
	req := get("/")
	req.Header.Add("Authorization", "Bearer "+k.rs256(t, jwtClaims("alice", nil)))
	req.Header.Add("Authorization", "Bearer "+k.rs256(t, jwtClaims("alice", nil)))
	if res := do(h, next, req); res.status != http.StatusUnauthorized {
		t.Errorf("two Authorization headers: %d, want 401", res.status)
	}
	if store.Calls() != 0 || next.Calls() != 0 {
		t.Errorf("store calls %d, next calls %d; want none", store.Calls(), next.Calls())
	}
}

// Under on_invalid client, every bad token is keyed on the client's
// network, never a quota of its own: bad tokens from one address share one.
func TestJWTClient(t *testing.T) {
	k := testJWTKeys(t)
	bad := badTokens(t, k)
	h := jwtHandler(t, k, "client", subZone("api", int64(len(bad)), time.Hour))
	provision(t, h)
	next := new(statusHandler)
	for _, tt := range bad {
		res := do(h, next, get("/", tt.headers...)) // from httptest's 192.0.2.1
		if res.status != http.StatusOK {
			t.Errorf("%s: %d, want 200 (charged to the client)", tt.name, res.status)
		}
		if got, _ := res.repl.GetString("http.ratelimit.jwt.sub"); got != "unverified:192.0.2.1/32" {
			t.Errorf("%s: {http.ratelimit.jwt.sub} = %q", tt.name, got)
		}
	}
	for _, tt := range bad {
		if res := do(h, next, get("/", tt.headers...)); res.status != http.StatusTooManyRequests {
			t.Errorf("%s again: %d, want 429: the client's quota is spent", tt.name, res.status)
		}
	}
	other := get("/", bad[2].headers...)
	other.RemoteAddr = "198.51.100.9:1234"
	if res := do(h, next, other); res.status != http.StatusOK {
		t.Errorf("another client's bad token: %d, want 200", res.status)
	}
	if res := do(h, next, get("/", bearer(k.rs256(t, jwtClaims("alice", nil)))...)); res.status != http.StatusOK {
		t.Errorf("a valid token: %d, want 200", res.status)
	}
}

// Claims are placeholders: those a template reads set at once, any other
// looked up when asked; a claim a verified token lacks expands empty.
func TestJWTClaimPlaceholders(t *testing.T) {
	k := testJWTKeys(t)
	h := jwtHandler(t, k, "", &Zone{Name: "tenant", Key: "{http.ratelimit.jwt.claim.tenant}", Events: 1, Window: caddy.Duration(time.Hour)})
	provision(t, h)
	next := new(statusHandler)
	tok := k.rs256(t, jwtClaims("alice", map[string]any{"tenant": "acme", "plan": 3, "admin": false}))
	res := do(h, next, get("/", bearer(tok)...))
	if res.status != http.StatusOK {
		t.Fatalf("%d, want 200", res.status)
	}
	for ph, want := range map[string]string{"http.ratelimit.jwt.claim.tenant": "acme", "http.ratelimit.jwt.claim.plan": "3",
		"http.ratelimit.jwt.claim.admin": "false", "http.ratelimit.jwt.claim.absent": "", "http.ratelimit.jwt.sub": "alice"} {
		if got, ok := res.repl.GetString(ph); !ok || got != want {
			t.Errorf("{%s} = %q, %v; want %q", ph, got, ok, want)
		}
	}
	if res := do(h, next, get("/", bearer(k.rs256(t, jwtClaims("bob", map[string]any{"tenant": "acme"})))...)); res.status != http.StatusTooManyRequests {
		t.Errorf("another sub of tenant acme: %d, want 429", res.status)
	}
	// without the claim: the empty key, one quota for all such tokens
	if res := do(h, next, get("/", bearer(k.rs256(t, jwtClaims("carol", nil)))...)); res.status != http.StatusOK {
		t.Errorf("first token without tenant: %d, want 200", res.status)
	}
	if res := do(h, next, get("/", bearer(k.rs256(t, jwtClaims("dave", nil)))...)); res.status != http.StatusTooManyRequests {
		t.Errorf("second token without tenant: %d, want 429", res.status)
	}
	if res := do(h, next, get("/", bearer(k.rs256(t, jwtClaims("erin", map[string]any{"tenant": strings.Repeat("t", 257)})))...)); res.status != http.StatusUnauthorized {
		t.Errorf("a tenant of 257 bytes: %d, want 401", res.status)
	}
}

// A zone that does not read the token does not ask for one: a request no
// jwt zone applies to passes without a token.
func TestJWTOnlyWhereRead(t *testing.T) {
	k := testJWTKeys(t)
	api := subZone("api", 10, time.Hour)
	api.MatchRaw = caddyRawMatcher(t, `{"path":["/api/*"]}`)
	h := jwtHandler(t, k, "", api, &Zone{Name: "ip", Key: "{http.ratelimit.client_network}", Events: 10, Window: caddy.Duration(time.Hour)})
	provision(t, h)
	next := new(statusHandler)
	if res := do(h, next, get("/")); res.status != http.StatusOK {
		t.Errorf("/ without a token: %d, want 200", res.status)
	}
	if res := do(h, next, get("/api/x")); res.status != http.StatusUnauthorized {
		t.Errorf("/api/x without a token: %d, want 401", res.status)
	}
}

// caddyRawMatcher is a zone's MatchRaw from its JSON.
func caddyRawMatcher(t *testing.T, s string) caddy.ModuleMap {
	t.Helper()
	var m caddy.ModuleMap
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The secret's placeholder is expanded at load; HS256 tokens verify with it.
func TestJWTSecretFromEnv(t *testing.T) {
	secret := strings.Repeat("k", 40)
	t.Setenv("EDGEKIT_TEST_JWT_SECRET", secret)
	h := &Handler{Zones: []*Zone{subZone("api", 1, time.Hour)}, JWT: &JWTKey{Secret: "{env.EDGEKIT_TEST_JWT_SECRET}"}}
	provision(t, h)
	tok := signJWT(t, jose.HS256, []byte(secret), "", map[string]any{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	if res := do(h, new(statusHandler), get("/", bearer(tok)...)); res.status != http.StatusOK {
		t.Errorf("HS256 token: %d, want 200", res.status)
	}
}

// With `body problem` and no error route, the 401 carries a problem body.
func TestJWTProblemBody(t *testing.T) {
	k := testJWTKeys(t)
	h := jwtHandler(t, k, "", subZone("api", 1, time.Hour))
	h.Body = bodyProblem
	provision(t, h)
	w := httptest.NewRecorder()
	req := caddyhttp.PrepareRequest(get("/", "Authorization", "Bearer x.y.z"), caddy.NewReplacer(), w, &caddyhttp.Server{})
	if err := h.ServeHTTP(w, req, new(statusHandler)); err != nil {
		t.Fatalf("ServeHTTP = %v, want the 401 written", err)
	}
	var p problem
	if w.Code != http.StatusUnauthorized || w.Header().Get("Content-Type") != "application/problem+json" || json.Unmarshal(w.Body.Bytes(), &p) != nil {
		t.Fatalf("%d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
	if p.Status != 401 || p.Title != "Unauthorized" {
		t.Errorf("problem %+v", p)
	}
}

// The token counter counts each verdict.
func TestJWTMetrics(t *testing.T) {
	k := testJWTKeys(t)
	h := jwtHandler(t, k, "client", subZone("api", 100, time.Hour))
	provision(t, h)
	before := [3]float64{jwtCount(t, "valid"), jwtCount(t, "invalid"), jwtCount(t, "missing")}
	do(h, new(statusHandler), get("/", bearer(k.rs256(t, jwtClaims("alice", nil)))...))
	do(h, new(statusHandler), get("/", bearer("x.y.z")...))
	do(h, new(statusHandler), get("/"))
	for i, r := range []string{"valid", "invalid", "missing"} {
		if got := jwtCount(t, r) - before[i]; got != 1 {
			t.Errorf("%s: +%v, want +1", r, got)
		}
	}
}

func jwtCount(t *testing.T, result string) float64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.jwtTokensVec.WithLabelValues(result).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// Acceptance: 1,000 tokens of one sub, each different (jti, iat), sent at
// once through three handlers sharing a Redis prefix, share one quota of
// 100 a day (besides a per-minute zone): exactly 100 pass.
func TestJWTRotatedTokensShareQuota(t *testing.T) {
	k := testJWTKeys(t)
	rc := sharedRedis(t)
	file := k.jwksFile(t)
	var hs []*Handler
	for range 3 {
		h := jwtHandler(t, k, "", subZone("daily", 100, 24*time.Hour), subZone("minute", 100_000, time.Minute))
		h.JWT.JWKSFile, h.Redis, h.Timeout = file, rc, caddy.Duration(5*time.Second)
		provision(t, h)
		hs = append(hs, h)
	}
	toks := make([]string, 1000)
	for i := range toks {
		toks[i] = k.rs256(t, jwtClaims("alice", map[string]any{"iat": time.Now().Unix() - int64(i%50)}))
	}
	next := new(statusHandler)
	counts := concurrently(t, len(toks), func(i int) int {
		return do(hs[i%len(hs)], next, get("/", bearer(toks[i])...)).status
	})
	if counts[http.StatusOK] != 100 || counts[http.StatusTooManyRequests] != 900 {
		t.Errorf("statuses %v, want exactly 100 × 200 and 900 × 429", counts)
	}
	if got := fmt.Sprint(next.Calls()); got != "100" {
		t.Errorf("next handler calls %s, want 100", got)
	}
}

// What only provisioning can judge fails the load: a secret too short once
// expanded, a jwks_file that cannot be read.
func TestJWTProvisionRefused(t *testing.T) {
	t.Setenv("EDGEKIT_TEST_JWT_SHORT", "short")
	for _, tt := range []struct {
		name string
		jwt  *JWTKey
		want string
	}{
		{"short secret", &JWTKey{Secret: "{env.EDGEKIT_TEST_JWT_SHORT}"}, "jwt: invalid secret: 5 bytes, must be at least 32"},
		{"missing file", &JWTKey{JWKSFile: t.TempDir() + "/absent.json"}, "jwt: reading jwks_file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{Zones: []*Zone{subZone("api", 1, time.Hour)}, JWT: tt.jwt}
			ctx, cancel := caddy.NewContext(caddy.Context{Context: t.Context()})
			defer cancel()
			err := h.Provision(ctx)
			_ = h.Cleanup()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Provision = %v, want %q", err, tt.want)
			}
			if tt.jwt.Secret != "" && strings.Contains(fmt.Sprint(err), "short") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

// A jwks_url that does not answer at load is logged, not fatal: the
// handler refuses tokens until a load succeeds, and counts the failures.
func TestJWTURLDownAtLoad(t *testing.T) {
	k := testJWTKeys(t)
	h := &Handler{Zones: []*Zone{subZone("api", 10, time.Hour)}, JWT: &JWTKey{JWKSURL: "https://127.0.0.1:1/jwks.json"}}
	if err := initMetrics(nil); err != nil {
		t.Fatal(err)
	}
	before := testutilCounter(t, metrics.jwksFailures)
	logs := provision(t, h)
	if logs.FilterMessage("loading the JWKS failed; the last keys loaded stay").Len() != 1 {
		t.Errorf("logs %v, want the failed load", logs.All())
	}
	if res := do(h, new(statusHandler), get("/", bearer(k.rs256(t, jwtClaims("alice", nil)))...)); res.status != http.StatusUnauthorized {
		t.Errorf("a token without keys: %d, want 401", res.status)
	}
	// the load at start, and the early one the token's unknown kid asked for
	if got := testutilCounter(t, metrics.jwksFailures) - before; got != 2 {
		t.Errorf("caddy_ratelimit_jwks_refresh_failures_total +%v, want +2", got)
	}
}

func testutilCounter(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
