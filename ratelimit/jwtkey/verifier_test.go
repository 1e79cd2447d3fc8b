package jwtkey

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func TestJWTVerifyValid(t *testing.T) {
	k := tk(t)
	v := newVerifier(t, k.options(t))
	tests := []struct {
		name, token string
	}{
		{"RS256", k.rs256(t, claims("alice", nil))},
		{"ES256", k.es256(t, claims("alice", nil))},
		{"EdDSA", k.eddsa(t, claims("alice", nil))},
		{"HS256", k.hs256(t, claims("alice", nil))},
		{"expired within the leeway", k.rs256(t, claims("alice", map[string]any{"exp": now.Add(-20 * time.Second).Unix()}))},
		{"nbf within the leeway", k.rs256(t, claims("alice", map[string]any{"nbf": now.Add(20 * time.Second).Unix()}))},
		{"audience array holding one", k.rs256(t, claims("alice", map[string]any{"aud": []string{"x", "other"}}))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // a miss, then a cache hit
				c, err := v.Verify(tt.token, now)
				if err != nil {
					t.Fatalf("Verify = %v, want valid", err)
				}
				if c.Subject != "alice" {
					t.Errorf("Subject = %q, want alice", c.Subject)
				}
			}
		})
	}
}

func TestJWTVerifyInvalid(t *testing.T) {
	k := tk(t)
	v := newVerifier(t, k.options(t))
	valid := k.rs256(t, claims("alice", nil))
	other := k.rs256(t, claims("mallory", nil))
	parts, otherParts := strings.Split(valid, "."), strings.Split(other, ".")
	tests := []struct {
		name, token, reason string
	}{
		{"empty", "", "empty"},
		{"expired beyond the leeway", k.rs256(t, claims("alice", map[string]any{"exp": now.Add(-31 * time.Second).Unix()})), "expired"},
		{"nbf beyond the leeway", k.es256(t, claims("alice", map[string]any{"nbf": now.Add(time.Minute).Unix()})), "nbf"},
		{"iat in the future", k.eddsa(t, claims("alice", map[string]any{"iat": now.Add(time.Hour).Unix()})), "iat"},
		{"wrong issuer", k.rs256(t, claims("alice", map[string]any{"iss": "https://evil.example"})), "issuer"},
		{"no issuer", k.rs256(t, claims("alice", map[string]any{"iss": nil})), "issuer"},
		{"wrong audience", k.rs256(t, claims("alice", map[string]any{"aud": "billing"})), "audience"},
		{"alg none", unsigned(t, claims("alice", nil)), "algorithm"},
		{"unknown kid", sign(t, jose.RS256, k.rsa2, "rsa9", claims("alice", nil)), "no key"},
		{"kid of another key type", sign(t, jose.ES256, k.ec, "rsa1", claims("alice", nil)), "no key"},
		{"HS256 with the RSA public key PEM as secret", sign(t, jose.HS256, k.rsaPublicPEM(t), "rsa1", claims("alice", nil)), "signature"},
		{"HS256 with the JWKS as secret", sign(t, jose.HS256, k.jwks(t, false), "rsa1", claims("alice", nil)), "signature"},
		{"signed by a key outside the set", sign(t, jose.RS256, k.rsa2, "rsa1", claims("alice", nil)), "signature"},
		{"tampered payload", parts[0] + "." + otherParts[1] + "." + parts[2], "signature"},
		{"tampered signature", parts[0] + "." + parts[1] + "." + otherParts[2], "signature"},
		{"two parts", parts[0] + "." + parts[1], "malformed"},
		{"oversize token", k.rs256(t, claims("alice", map[string]any{"pad": strings.Repeat("x", MaxTokenLen)})), "8 KiB"},
		{"oversize sub", k.rs256(t, claims(strings.Repeat("a", MaxClaimLen+1), nil)), "claim \"sub\""},
		{"sub not a string", k.rs256(t, claims("", map[string]any{"sub": 42})), "sub"},
		{"exp not a number", k.rs256(t, claims("alice", map[string]any{"exp": "soon"})), "exp"},
		{"claims not an object", signRaw(t, jose.RS256, k.rsa, "rsa1", "[1]"), "object"},
		{"exp key in other case", signRaw(t, jose.RS256, k.rsa, "rsa1", `{"sub":"a","iss":"https://issuer.example","aud":"api","exp":1,"EXP":1900000000}`), "expired"},
		{"another alg than the key's (PS256 with an RS256 key)", sign(t, jose.PS256, k.rsa, "rsa1", claims("alice", nil)), "no key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := v.Verify(tt.token, now)
			if err == nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Verify = %+v, %v; want ErrInvalid", c, err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("Verify error %q, want it to name %q", err, tt.reason)
			}
			if tt.token != "" && strings.Contains(err.Error(), tt.token) {
				t.Errorf("the error carries the token")
			}
		})
	}
}

// A token verified once and cached is checked again at each hit: it
// expires in the cache as it would outside.
func TestJWTCacheRechecksTimes(t *testing.T) {
	k := tk(t)
	v := newVerifier(t, k.options(t))
	tok := k.rs256(t, claims("alice", map[string]any{"exp": now.Add(time.Minute).Unix()}))
	if _, err := v.Verify(tok, now); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(tok, now.Add(time.Minute+29*time.Second)); err != nil {
		t.Errorf("within the leeway from the cache: %v", err)
	}
	if _, err := v.Verify(tok, now.Add(time.Minute+31*time.Second)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("past the leeway from the cache: %v, want expired", err)
	}
}

// HMAC tokens are verified only with the secret: without one, HS256 is not
// accepted, and naming it without a secret fails the options.
func TestJWTHMACNeedsSecret(t *testing.T) {
	k := tk(t)
	opts := k.options(t)
	opts.Secret = nil
	v := newVerifier(t, opts)
	// The attack: HS256 keyed with the public key's bytes, which the
	// verifier must never use as an HMAC secret.
	for _, secret := range [][]byte{k.rsaPublicPEM(t), k.jwks(t, false)} {
		tok := sign(t, jose.HS256, secret, "rsa1", claims("alice", nil))
		if _, err := v.Verify(tok, now); err == nil {
			t.Errorf("HS256 signed with public key bytes verified")
		}
	}
	opts.Algorithms = []string{"RS256", "HS256"}
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "HS256 needs a secret") {
		t.Errorf("New with HS256 and no secret = %v", err)
	}
}

// A claim keyed on must be a short scalar without the reserved prefix;
// claims nobody keys on are exposed only when short scalars.
func TestJWTClaims(t *testing.T) {
	k := tk(t)
	opts := k.options(t)
	opts.Claims, opts.ReservedPrefix = []string{"tenant"}, "unverified:"
	v := newVerifier(t, opts)
	c, err := v.Verify(k.rs256(t, claims("alice", map[string]any{"tenant": uint64(12345678901234567890), "admin": true,
		"org": "acme", "roles": []string{"a"}, "long": strings.Repeat("x", MaxClaimLen+1)})), now)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"tenant": "12345678901234567890", "admin": "true", "org": "acme", "sub": "alice"} {
		if got, ok := c.Claim(name); !ok || got != want {
			t.Errorf("Claim(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"roles", "long", "absent"} {
		if got, ok := c.Claim(name); ok {
			t.Errorf("Claim(%q) = %q, want absent", name, got)
		}
	}
	for name, val := range map[string]any{"object": map[string]any{"a": 1}, "array": []int{1},
		"oversize": strings.Repeat("t", MaxClaimLen+1), "reserved prefix": "unverified:203.0.113.7/32"} {
		if _, err := v.Verify(k.rs256(t, claims("alice", map[string]any{"tenant": val})), now); err == nil {
			t.Errorf("tenant %s: verified, want invalid", name)
		}
	}
	if _, err := v.Verify(k.rs256(t, claims("unverified:x", nil)), now); err == nil {
		t.Errorf("sub with the reserved prefix verified")
	}
}

// hs256By signs a token by hand with crypto/hmac, as an attacker would.
func hs256By(header, payload string, key []byte) string {
	enc := base64.RawURLEncoding.EncodeToString
	in := enc([]byte(header)) + "." + enc([]byte(payload))
	m := hmac.New(sha256.New, key)
	m.Write([]byte(in))
	return in + "." + enc(m.Sum(nil))
}

// The HMAC-with-public-key attack by hand, with the verifier accepting
// HS256 (it has a secret): the kid names the RSA key, the MAC is keyed
// with its PEM; refused.
func TestJWTHMACWithPublicKeyByHand(t *testing.T) {
	k := tk(t)
	v := newVerifier(t, k.options(t))
	payload := `{"sub":"alice","iss":"https://issuer.example","aud":"api","exp":1900000000}`
	for _, key := range [][]byte{k.rsaPublicPEM(t), k.jwks(t, false)} {
		tok := hs256By(`{"alg":"HS256","kid":"rsa1"}`, payload, key)
		if _, err := v.Verify(tok, now); err == nil {
			t.Errorf("HS256 keyed with public key bytes verified")
		}
	}
	if _, err := v.Verify(hs256By(`{"alg":"HS256"}`, payload, k.secret), now); err != nil {
		t.Errorf("the same token with the real secret: %v", err)
	}
}

func TestJWTOptionsCheck(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no source", Options{}, "one of jwks_file, jwks_url or secret"},
		{"file and url", Options{JWKSFile: "a", JWKSURL: "https://x/"}, "use one"},
		{"http url", Options{JWKSURL: "http://idp.example/jwks"}, "https://"},
		{"short secret", Options{Secret: []byte("short")}, "at least 32"},
		{"none", Options{JWKSFile: "a", Algorithms: []string{"none"}}, "never accepted"},
		{"unknown", Options{JWKSFile: "a", Algorithms: []string{"RS1"}}, "unknown algorithm"},
		{"HS512 short secret", Options{Secret: make([]byte, 40), Algorithms: []string{"HS512"}}, "at least 64"},
		{"RS256 without jwks", Options{Secret: make([]byte, 40), Algorithms: []string{"RS256"}}, "needs jwks_file"},
		{"leeway", Options{JWKSFile: "a", Leeway: 6 * time.Minute}, "leeway"},
		{"refresh", Options{JWKSFile: "a", Refresh: time.Millisecond}, "refresh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Check()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check = %v, want %q", err, tt.want)
			}
		})
	}
	o := Options{Secret: make([]byte, 48)}
	if got := strings.Join(o.DefaultAlgorithms(), " "); got != "HS256 HS384" {
		t.Errorf("DefaultAlgorithms with a 48-byte secret = %s", got)
	}
}
