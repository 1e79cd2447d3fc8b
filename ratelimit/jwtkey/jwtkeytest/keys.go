// Package jwtkeytest holds the signing keys and token helpers that the jwt
// tests of ratelimit and ratelimit/jwtkey share: made once per test
// binary, never used outside tests.
package jwtkeytest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Keys are the test signing keys: RSA ("rsa1" in the JWKS), RSA2 ("rsa2",
// in the rotated JWKS only), EC ("ec1"), ED ("ed1") and an HMAC Secret.
type Keys struct {
	RSA, RSA2 *rsa.PrivateKey
	EC        *ecdsa.PrivateKey
	ED        ed25519.PrivateKey
	Secret    []byte
}

var (
	once sync.Once
	keys Keys
)

// Get returns the keys, made on the first call.
func Get() *Keys {
	once.Do(func() {
		var err error
		if keys.RSA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keys.RSA2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keys.EC, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if _, keys.ED, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
		keys.Secret = []byte("0123456789abcdef0123456789abcdef-hmac")
	})
	return &keys
}

// JWKS is the public JWKS of the keys: rsa1 (RS256), ec1 (ES256), ed1
// (EdDSA); rotated, rsa2 in rsa1's place.
func (k *Keys) JWKS(t testing.TB, rotated bool) []byte {
	t.Helper()
	r, kid := &k.RSA.PublicKey, "rsa1"
	if rotated {
		r, kid = &k.RSA2.PublicKey, "rsa2"
	}
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: r, KeyID: kid, Algorithm: "RS256", Use: "sig"},
		{Key: &k.EC.PublicKey, KeyID: "ec1", Algorithm: "ES256", Use: "sig"},
		{Key: k.ED.Public(), KeyID: "ed1", Algorithm: "EdDSA", Use: "sig"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// JWKSFile writes the JWKS to a file of t's temporary directory.
func (k *Keys) JWKSFile(t testing.TB, rotated bool) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, k.JWKS(t, rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// PublicPEM is the PEM of rsa1's public key: what an attacker would use as
// an HMAC secret.
func (k *Keys) PublicPEM(t testing.TB) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&k.RSA.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Sign signs claims as a JWT with key under alg, kid in the header ("":
// none).
func Sign(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims any) string {
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
