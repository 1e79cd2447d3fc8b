package jwtkey

import (
	"strconv"
	"testing"
)

// BenchmarkJWTVerifyHit: a token verified before (the request path's
// usual case): a SHA-256 of the token, a cache lookup, the times again.
func BenchmarkJWTVerifyHit(b *testing.B) {
	k := tk(b)
	v := newVerifier(b, k.options(b))
	tok := k.rs256(b, claims("alice", map[string]any{"jti": "1"}))
	if _, err := v.Verify(tok, now); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(tok, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJWTVerifyMiss: a token never seen, verified in full (parse,
// signature, claims), each algorithm.
func BenchmarkJWTVerifyMiss(b *testing.B) {
	k := tk(b)
	signers := map[string]func(testing.TB, any) string{"RS256": k.rs256, "ES256": k.es256, "EdDSA": k.eddsa, "HS256": k.hs256}
	for _, alg := range []string{"RS256", "ES256", "EdDSA", "HS256"} {
		b.Run(alg, func(b *testing.B) {
			v := newVerifier(b, k.options(b))
			toks := make([]string, 512)
			for i := range toks {
				toks[i] = signers[alg](b, claims("alice", map[string]any{"jti": strconv.Itoa(i)}))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i%len(toks) == 0 {
					v.cache.clear()
				}
				if _, err := v.Verify(toks[i%len(toks)], now); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
