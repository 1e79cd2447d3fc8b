package ratelimit

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/edgekit/caddy-edgekit/ratelimit/jwtkey/jwtkeytest"
)

// jwtTestKeys are the signing keys of the handler's JWT tests (see
// jwtkeytest): rsa1 (RS256), ec1 (ES256) and ed1 (EdDSA) in the JWKS;
// other, in none.
type jwtTestKeys struct {
	*jwtkeytest.Keys
	rsa, other *rsa.PrivateKey
	ec         *ecdsa.PrivateKey
	ed         ed25519.PrivateKey
}

// The issuer and audience of the test tokens.
const (
	testIssuer   = "https://login.example.com/"
	testAudience = "https://api.example.com"
)

func testJWTKeys(t testing.TB) *jwtTestKeys {
	t.Helper()
	k := jwtkeytest.Get()
	return &jwtTestKeys{Keys: k, rsa: k.RSA, other: k.RSA2, ec: k.EC, ed: k.ED}
}

// jwksFile and publicPEM: see jwtkeytest.
func (k *jwtTestKeys) jwksFile(t testing.TB) string  { return k.JWKSFile(t, false) }
func (k *jwtTestKeys) publicPEM(t testing.TB) []byte { return k.PublicPEM(t) }

// signJWT signs claims with key under alg, kid in the header.
func signJWT(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims any) string {
	t.Helper()
	return jwtkeytest.Sign(t, alg, key, kid, claims)
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
