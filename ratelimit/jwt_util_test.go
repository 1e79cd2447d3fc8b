package ratelimit

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

	"github.com/caddyserver/caddy/v2"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// jwtTestKeys are the signing keys of the handler's JWT tests: rsa1
// (RS256), ec1 (ES256) and ed1 (EdDSA) in the JWKS; other, in none.
type jwtTestKeys struct {
	rsa, other *rsa.PrivateKey
	ec         *ecdsa.PrivateKey
	ed         ed25519.PrivateKey
}

var (
	jwtKeysOnce sync.Once
	jwtKeys     jwtTestKeys
)

// The issuer and audience of the test tokens.
const (
	testIssuer   = "https://login.example.com/"
	testAudience = "https://api.example.com"
)

func testJWTKeys(t testing.TB) *jwtTestKeys {
	t.Helper()
	jwtKeysOnce.Do(func() {
		var err error
		if jwtKeys.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if jwtKeys.other, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if jwtKeys.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if _, jwtKeys.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
	})
	return &jwtKeys
}

// jwks is the JWKS of the keys.
func (k *jwtTestKeys) jwks(t testing.TB) []byte {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &k.rsa.PublicKey, KeyID: "rsa1", Algorithm: "RS256", Use: "sig"},
		{Key: &k.ec.PublicKey, KeyID: "ec1", Algorithm: "ES256", Use: "sig"},
		{Key: k.ed.Public(), KeyID: "ed1", Algorithm: "EdDSA", Use: "sig"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jwksFile writes the JWKS into t's temporary directory.
func (k *jwtTestKeys) jwksFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, k.jwks(t), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// publicPEM is rsa1's public key in PEM: the HMAC-with-public-key attack's secret.
func (k *jwtTestKeys) publicPEM(t testing.TB) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&k.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// signJWT signs claims with key under alg, kid in the header.
func signJWT(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, new(jose.SignerOptions).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// rs256 signs claims with rsa1.
func (k *jwtTestKeys) rs256(t testing.TB, claims any) string {
	return signJWT(t, jose.RS256, k.rsa, "rsa1", claims)
}

// jwtClaims are claims valid for an hour from now, of subject sub, with a
// fresh jti: each token differs.
func jwtClaims(sub string, extra map[string]any) map[string]any {
	jti := make([]byte, 9)
	_, _ = rand.Read(jti)
	c := map[string]any{"iss": testIssuer, "aud": testAudience, "sub": sub, "jti": base64.RawURLEncoding.EncodeToString(jti),
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// jwtHandler is a handler of zones keyed through a jwt block on the test
// JWKS, issuer and audience, with onInvalid.
func jwtHandler(t testing.TB, k *jwtTestKeys, onInvalid string, zones ...*Zone) *Handler {
	return &Handler{Zones: zones, JWT: &JWTKey{JWKSFile: k.jwksFile(t), Issuer: testIssuer,
		Audience: []string{testAudience}, OnInvalid: onInvalid}}
}

// subZone is a zone of events per window keyed by the token's subject.
func subZone(name string, events int64, window time.Duration) *Zone {
	return &Zone{Name: name, Key: "{http.ratelimit.jwt.sub}", Events: events, Window: caddy.Duration(window)}
}

// bearer are the header pairs of a request carrying token.
func bearer(token string) []string {
	return []string{"Authorization", "Bearer " + token}
}
