package jwtkey

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// testKeys are the signing keys of the tests, made once.
type testKeys struct {
	rsa, rsa2 *rsa.PrivateKey
	ec        *ecdsa.PrivateKey
	ed        ed25519.PrivateKey
	secret    []byte
}

var (
	keysOnce sync.Once
	keys     testKeys
)

// tk returns the test keys.
func tk(t testing.TB) *testKeys {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if keys.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keys.rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keys.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if _, keys.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
		keys.secret = []byte("0123456789abcdef0123456789abcdef-hmac")
	})
	return &keys
}

// now is the tests' clock.
var now = time.Unix(1_800_000_000, 0)

// jwks is the public JWKS of the test keys: rsa1 (RS256), ec1 (ES256),
// ed1 (EdDSA); with rotated, rsa2 replaces rsa1.
func (k *testKeys) jwks(t testing.TB, rotated bool) []byte {
	t.Helper()
	r, kid := &k.rsa.PublicKey, "rsa1"
	if rotated {
		r, kid = &k.rsa2.PublicKey, "rsa2"
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: r, KeyID: kid, Algorithm: "RS256", Use: "sig"},
		{Key: &k.ec.PublicKey, KeyID: "ec1", Algorithm: "ES256", Use: "sig"},
		{Key: k.ed.Public(), KeyID: "ed1", Algorithm: "EdDSA", Use: "sig"},
	}}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jwksFile writes the JWKS to a file of t's temporary directory.
func (k *testKeys) jwksFile(t testing.TB, rotated bool) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, k.jwks(t, rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// rsaPublicPEM is the PEM of rsa1's public key: what an attacker would use
// as an HMAC secret.
func (k *testKeys) rsaPublicPEM(t testing.TB) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&k.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// sign signs claims with key under alg and kid ("" none).
func sign(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims any) string {
	t.Helper()
	opts := new(jose.SignerOptions).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
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
