// Package jwtkey verifies the bearer tokens the rate limiter keys on: a JWT
// in JWS compact form, its signature checked by go-jose against a key from
// a JWKS (file or URL, refreshed in the background) or an HMAC secret,
// then its `exp`, `nbf` and `iat` with a leeway, its `iss` and its `aud`.
// A verified token's claims are kept in a bounded cache, so a client
// sending the same token again costs a hash and a map lookup, not a
// signature check. It imports no Caddy and no zap.
package jwtkey

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Bounds and defaults.
const (
	// MaxTokenLen is the longest token verified; a longer one is invalid.
	MaxTokenLen = 8 << 10
	// MaxClaimLen is the longest claim value exposed (in bytes); a claim
	// the key reads that is longer makes the token invalid.
	MaxClaimLen = 256
	// MaxJWKSBytes bounds a JWKS document (file or response body).
	MaxJWKSBytes = 1 << 20
	// MaxKeys bounds the keys of a JWKS.
	MaxKeys = 100
	// FetchTimeout bounds one JWKS request.
	FetchTimeout = 10 * time.Second
	// EarlyRefreshEvery is the least time between two refreshes triggered
	// by a token whose key the set lacks.
	EarlyRefreshEvery = 10 * time.Second
	// DefaultLeeway, MaxLeeway: the clock skew allowed on exp, nbf, iat.
	DefaultLeeway = 30 * time.Second
	MaxLeeway     = 5 * time.Minute
	// DefaultRefresh, MinRefresh: how often a JWKS is loaded again.
	DefaultRefresh = 5 * time.Minute
	MinRefresh     = time.Second
	// DefaultCacheSize is how many verified tokens are remembered.
	DefaultCacheSize = 10_000
	// MinRSABits is the smallest RSA key of a JWKS used.
	MinRSABits = 2048
)

// ErrInvalid is wrapped by every error of Verify: the token is not to be
// trusted. Its text names the reason, never the token.
var ErrInvalid = errors.New("invalid token")

// invalid is an ErrInvalid with a fixed reason.
func invalid(reason string) error { return fmt.Errorf("%w: %s", ErrInvalid, reason) }

// Options configure a Verifier.
type Options struct {
	JWKSFile string // a JWKS document on disk, re-read on each refresh
	JWKSURL  string // a JWKS document over HTTPS
	Secret   []byte // the HMAC key of HS256/384/512 tokens (>= 32, 48, 64 bytes)

	Issuer   string        // when set, `iss` must equal it
	Audience []string      // when set, `aud` must hold one of them
	Leeway   time.Duration // 0-MaxLeeway, on exp, nbf and iat

	// The accepted `alg` values; empty: DefaultAlgorithms. `none` never is.
	Algorithms []string
	// How often the JWKS is loaded again (>= MinRefresh). Default: DefaultRefresh.
	Refresh time.Duration

	// The claims the caller keys on besides `sub`: when present, each must
	// be a string, number or boolean of at most MaxClaimLen bytes not
	// starting with ReservedPrefix, or the token is invalid.
	Claims []string
	// ReservedPrefix, when set, is a prefix no claim keyed on may carry.
	ReservedPrefix string

	CacheSize int          // verified tokens remembered; default DefaultCacheSize
	Client    *http.Client // for jwks_url; default: FetchTimeout, HTTPS redirects only
	// OnRefresh, when set, is called after each load of the JWKS: changed
	// when the keys differ from the last set, err when the load failed
	// (the last good set then stays).
	OnRefresh func(changed bool, err error)
}

// Claims are a verified token's claims.
type Claims struct {
	// Subject is the `sub` claim, "" when absent.
	Subject string
	// values: each top-level claim that is a string, number or boolean of
	// at most MaxClaimLen bytes, as text (a number as written)
	values map[string]string
}

// Claim is the top-level claim name as text: a string, a number as the
// token writes it, `true` or `false`; false when absent or not such a
// value of at most MaxClaimLen bytes.
func (c *Claims) Claim(name string) (string, bool) {
	v, ok := c.values[name]
	return v, ok
}

// Verifier verifies tokens. Its methods are safe for concurrent use.
type Verifier struct {
	opts   Options
	algs   []jose.SignatureAlgorithm
	keys   atomic.Pointer[keySet]
	cache  *tokenCache
	client *http.Client

	loadMu sync.Mutex // one load of the JWKS at a time
	early  struct {
		sync.Mutex
		last    time.Time     // the last early refresh
		running chan struct{} // closed when the running one ends; nil: none
	}
	stop    func()
	stopped chan struct{}
}

// New checks opts and prepares a Verifier; its JWKS, if any, is loaded by
// Load, and kept fresh between Start and Stop.
func New(opts Options) (*Verifier, error) {
	if err := opts.Check(); err != nil {
		return nil, err
	}
	v := &Verifier{opts: opts, client: opts.Client}
	for _, a := range opts.algorithms() {
		v.algs = append(v.algs, jose.SignatureAlgorithm(a))
	}
	if v.opts.Refresh == 0 {
		v.opts.Refresh = DefaultRefresh
	}
	if v.client == nil {
		v.client = &http.Client{Timeout: FetchTimeout, CheckRedirect: httpsRedirects}
	}
	v.cache = newTokenCache(opts.CacheSize)
	v.keys.Store(new(keySet))
	return v, nil
}

// Verify verifies token at now: its signature, then exp, nbf and iat with
// the leeway, iss and aud. Every error wraps ErrInvalid.
func (v *Verifier) Verify(token string, now time.Time) (*Claims, error) {
	if token == "" {
		return nil, invalid("empty")
	}
	if len(token) > MaxTokenLen {
		return nil, invalid("longer than 8 KiB")
	}
	// the token's bytes without a copy: Sum256 only reads them
	digest := sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token)))
	set := v.keys.Load()
	if e, ok := v.cache.get(digest, set.gen); ok {
		if err := e.times.ValidateWithLeeway(jwt.Expected{Time: now}, v.opts.Leeway); err != nil {
			return nil, timeError(err)
		}
		return e.claims, nil
	}
	if !canonical(token) { // a cached token was
		return nil, invalid("malformed: not three canonical base64url parts")
	}
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		return nil, invalid("malformed, or an algorithm not accepted")
	}
	hdr := tok.Headers[0]
	keys := v.candidates(set, hdr)
	if len(keys) == 0 && !isHMAC(hdr.Algorithm) && v.refreshEarly(now) {
		set = v.keys.Load()
		keys = v.candidates(set, hdr)
	}
	if len(keys) == 0 {
		return nil, invalid("no key for its kid and alg")
	}
	var p payload
	for _, k := range keys {
		if err = tok.Claims(k, &p); err == nil {
			break
		}
	}
	if err != nil {
		return nil, invalid("bad signature")
	}
	c, times, err := v.check(p.raw, now)
	if err != nil {
		return nil, err
	}
	v.cache.put(digest, &cacheEntry{claims: c, times: times, gen: set.gen})
	return c, nil
}

// b64url is the base64url alphabet's value of each byte; 0xff: none.
var b64url = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" {
		t[c] = byte(i)
	}
	return t
}()

// canonical reports whether token is three parts of canonical unpadded
// base64url (the unused bits of the last character zero), so one signed
// content has one token: Go's decoder would also skip newlines and
// ignore those bits.
func canonical(token string) bool {
	dots, start := 0, 0
	for i := 0; i <= len(token); i++ {
		if i < len(token) && token[i] != '.' {
			if b64url[token[i]] == 0xff {
				return false
			}
			continue
		}
		if !canonicalEnd(token[start:i]) {
			return false
		}
		dots, start = dots+1, i+1
	}
	return dots == 3
}

// canonicalEnd reports whether the base64url part p ends canonically.
func canonicalEnd(p string) bool {
	switch len(p) % 4 {
	case 1:
		return false
	case 2:
		return b64url[p[len(p)-1]]&0x0f == 0
	case 3:
		return b64url[p[len(p)-1]]&0x03 == 0
	}
	return true
}

// payload keeps a verified payload's bytes, decoded by check.
type payload struct{ raw []byte }

func (p *payload) UnmarshalJSON(b []byte) error {
	p.raw = append(p.raw[:0], b...)
	return nil
}

// timeError is the reason of a failed time check.
func timeError(err error) error {
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return invalid("expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return invalid("not valid yet (nbf)")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return invalid("issued in the future (iat)")
	}
	return invalid("times")
}

// candidates are the keys of set (or the secret) that may have signed a
// token with hdr: the secret for HS*, else the keys of its kid whose type
// suits its alg (never a public key as an HMAC secret). A token without a
// kid is checked against the set's only key of that type, if it has one.
func (v *Verifier) candidates(set *keySet, hdr jose.Header) []any {
	alg := hdr.Algorithm
	if isHMAC(alg) {
		if len(v.opts.Secret) == 0 {
			return nil
		}
		return []any{v.opts.Secret}
	}
	var out []any
	for i := range set.keys {
		k := &set.keys[i]
		if (hdr.KeyID == "" || k.kid == hdr.KeyID) && k.suits(alg) {
			out = append(out, k.key)
		}
	}
	if hdr.KeyID == "" && len(out) > 1 {
		return nil // ambiguous: a kid is required
	}
	return out
}

// isHMAC reports whether alg is HS256, HS384 or HS512.
func isHMAC(alg string) bool {
	return alg == string(jose.HS256) || alg == string(jose.HS384) || alg == string(jose.HS512)
}

// suits reports whether the key may verify a signature of alg.
func (k *verifyKey) suits(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch key := k.key.(type) {
	case *rsa.PublicKey:
		switch jose.SignatureAlgorithm(alg) {
		case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
			return true
		}
	case *ecdsa.PublicKey:
		switch jose.SignatureAlgorithm(alg) {
		case jose.ES256:
			return key.Curve == elliptic.P256()
		case jose.ES384:
			return key.Curve == elliptic.P384()
		case jose.ES512:
			return key.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == string(jose.EdDSA)
	}
	return false
}
