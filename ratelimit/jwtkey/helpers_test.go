package jwtkey

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/edgekit/caddy-edgekit/ratelimit/jwtkey/jwtkeytest"
)

// testKeys are the signing keys of the tests (see jwtkeytest).
type testKeys struct {
	*jwtkeytest.Keys
	rsa, rsa2 *rsa.PrivateKey
	ec        *ecdsa.PrivateKey
	ed        ed25519.PrivateKey
	secret    []byte
}

// tk returns the test keys.
func tk(t testing.TB) *testKeys {
	t.Helper()
	k := jwtkeytest.Get()
	return &testKeys{Keys: k, rsa: k.RSA, rsa2: k.RSA2, ec: k.EC, ed: k.ED, secret: k.Secret}
}

// now is the tests' clock.
var now = time.Unix(1_800_000_000, 0)

// jwks, jwksFile, rsaPublicPEM and sign: see jwtkeytest.
func (k *testKeys) jwks(t testing.TB, rotated bool) []byte     { return k.JWKS(t, rotated) }
func (k *testKeys) jwksFile(t testing.TB, rotated bool) string { return k.JWKSFile(t, rotated) }
func (k *testKeys) rsaPublicPEM(t testing.TB) []byte           { return k.PublicPEM(t) }
func sign(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims any) string {
	t.Helper()
	return jwtkeytest.Sign(t, alg, key, kid, claims)
}

// signRaw signs the payload as it is.
func signRaw(t testing.TB, alg jose.SignatureAlgorithm, key any, kid, payload string) string {
	t.Helper()
	opts := new(jose.SignerOptions).WithHeader("kid", kid)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// claims are a token's claims valid at now: issuer, audience, an hour to live.
func claims(sub string, extra map[string]any) map[string]any {
	c := map[string]any{"iss": "https://issuer.example", "aud": "api", "sub": sub,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// rs256, es256, ed, hs256 sign claims with the test keys.
func (k *testKeys) rs256(t testing.TB, c any) string { return sign(t, jose.RS256, k.rsa, "rsa1", c) }
func (k *testKeys) es256(t testing.TB, c any) string { return sign(t, jose.ES256, k.ec, "ec1", c) }
func (k *testKeys) eddsa(t testing.TB, c any) string { return sign(t, jose.EdDSA, k.ed, "ed1", c) }
func (k *testKeys) hs256(t testing.TB, c any) string {
	return sign(t, jose.HS256, k.secret, "", c)
}

// unsigned is c as an `alg: none` token.
func unsigned(t testing.TB, c any) string {
	t.Helper()
	p, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(p) + "."
}

// options are the verifier options of the tests: the test JWKS file and
// secret, the issuer and audience of claims, the default leeway.
func (k *testKeys) options(t testing.TB) Options {
	return Options{JWKSFile: k.jwksFile(t, false), Secret: k.secret, Issuer: "https://issuer.example",
		Audience: []string{"api", "other"}, Leeway: DefaultLeeway}
}

// newVerifier is a loaded Verifier with opts.
func newVerifier(t testing.TB, opts Options) *Verifier {
	t.Helper()
	v, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := v.Load(t.Context()); err != nil {
		t.Fatalf("Load: %v", err)
	}
	return v
}
