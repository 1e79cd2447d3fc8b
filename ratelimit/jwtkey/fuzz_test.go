package jwtkey

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// FuzzJWTKey: whenever Verify returns claims, an oracle written apart from
// it (base64url and JSON decoded here, the signature checked with Go's
// crypto against the test keys, the times, issuer and audience by hand)
// says the token is valid, with the same subject: no invalid token ever
// keys on a claim.
func FuzzJWTKey(f *testing.F) {
	k := tk(f)
	opts := k.options(f)
	opts.Algorithms = []string{"RS256", "ES256", "EdDSA", "HS256"}
	opts.Claims = []string{"tenant"}
	v := newVerifier(f, opts)
	for _, c := range []map[string]any{claims("alice", nil), claims("bob", map[string]any{"tenant": "acme"}),
		claims("carol", map[string]any{"exp": now.Add(-time.Hour).Unix()}), claims("dave", map[string]any{"aud": "billing"}),
		claims("erin", map[string]any{"nbf": now.Add(-time.Minute).Unix(), "aud": []string{"x", "api"}})} {
		f.Add(k.rs256(f, c), int64(0))
		f.Add(k.es256(f, c), int64(20))
		f.Add(k.eddsa(f, c), int64(-40))
		f.Add(k.hs256(f, c), int64(3600))
		f.Add(unsigned(f, c), int64(0))
		f.Add(sign(f, jose.HS256, k.rsaPublicPEM(f), "rsa1", c), int64(0))
	}
	f.Add(hs256By(`{"alg":"HS256"}`, `{"sub":"x","iss":"https://issuer.example","aud":"api","EXP":1}`, k.secret), int64(0))
	f.Fuzz(func(t *testing.T, token string, offset int64) {
		at := now.Add(time.Duration(offset%100_000) * time.Second)
		c, err := v.Verify(token, at)
		if err != nil {
			return
		}
		sub, why := oracle(k, opts, token, at)
		if why != "" {
			t.Fatalf("Verify accepted %q at %v; the oracle says: %s", token, at, why)
		}
		if c.Subject != sub {
			t.Fatalf("Subject = %q, the oracle reads %q", c.Subject, sub)
		}
	})
}

// oracle says whether token is valid at now for opts and the test keys:
// "" and its subject if so, else why not.
func oracle(k *testKeys, opts Options, token string, now time.Time) (sub, why string) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(token) > MaxTokenLen {
		return "", "not three parts of at most 8 KiB"
	}
	var dec [3][]byte
	for i, p := range parts {
		b, err := base64.RawURLEncoding.Strict().DecodeString(p)
		if err != nil || strings.ContainsAny(p, "\r\n") {
			return "", "base64url"
		}
		dec[i] = b
	}
	var hdr map[string]json.RawMessage
	if json.Unmarshal(dec[0], &hdr) != nil {
		return "", "header"
	}
	var alg, kid string
	if json.Unmarshal(hdr["alg"], &alg) != nil || !slices.Contains(opts.Algorithms, alg) {
		return "", "alg"
	}
	if raw, ok := hdr["kid"]; ok && json.Unmarshal(raw, &kid) != nil {
		return "", "kid"
	}
	if !oracleSignature(k, alg, kid, []byte(parts[0]+"."+parts[1]), dec[2]) {
		return "", "signature"
	}
	return oracleClaims(opts, dec[1], now)
}

// oracleSignature checks sig over input with the test key kid names.
func oracleSignature(k *testKeys, alg, kid string, input, sig []byte) bool {
	h := sha256.Sum256(input)
	switch {
	case alg == "HS256":
		m := hmac.New(sha256.New, k.secret)
		m.Write(input)
		return hmac.Equal(m.Sum(nil), sig)
	case alg == "RS256" && (kid == "rsa1" || kid == ""):
		return rsa.VerifyPKCS1v15(&k.rsa.PublicKey, crypto.SHA256, h[:], sig) == nil
	case alg == "ES256" && (kid == "ec1" || kid == "") && len(sig) == 64:
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(&k.ec.PublicKey, h[:], r, s)
	case alg == "EdDSA" && (kid == "ed1" || kid == ""):
		return ed25519.Verify(k.ed.Public().(ed25519.PublicKey), input, sig)
	}
	return false
}

// oracleClaims checks the claims by hand.
func oracleClaims(opts Options, payload []byte, now time.Time) (string, string) {
	var c map[string]json.RawMessage
	if json.Unmarshal(payload, &c) != nil {
		return "", "payload"
	}
	var iss, sub string
	if json.Unmarshal(c["iss"], &iss) != nil || iss != opts.Issuer {
		return "", "issuer"
	}
	if raw, ok := c["sub"]; ok && (json.Unmarshal(raw, &sub) != nil || len(sub) > MaxClaimLen || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`))) {
		return "", "sub"
	}
	var aud []string
	var one string
	if json.Unmarshal(c["aud"], &one) == nil {
		aud = []string{one}
	} else if json.Unmarshal(c["aud"], &aud) != nil {
		return "", "aud"
	}
	if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(opts.Audience, a) }) {
		return "", "audience"
	}
	leeway := int64(opts.Leeway / time.Second)
	checks := []struct {
		name string
		bad  func(t int64) bool
	}{
		{"exp", func(t int64) bool { return now.Unix()-leeway > t }},
		{"nbf", func(t int64) bool { return now.Unix()+leeway < t }},
		{"iat", func(t int64) bool { return now.Unix()+leeway < t }},
	}
	for _, ch := range checks {
		raw, ok := c[ch.name]
		if !ok || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
		if err != nil || math.Abs(f) >= 1<<62 || ch.bad(int64(f)) {
			return "", ch.name
		}
	}
	if raw, ok := c["tenant"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && len(s) > MaxClaimLen {
			return "", "tenant"
		}
	}
	return sub, ""
}
