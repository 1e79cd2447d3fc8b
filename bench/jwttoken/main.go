// Command jwttoken writes a JWKS of one fresh RSA key for make bench and
// prints an RS256 token it signs (subject `alice`, a day to live), so the
// bench keys on a verified JWT without an identity provider.
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func main() {
	out := flag.String("jwks", "jwks.json", "the JWKS file to write")
	flag.Parse()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		log.Fatal(err)
	}
	doc, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &key.PublicKey, KeyID: "bench", Algorithm: "RS256", Use: "sig"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, doc, 0o600); err != nil {
		log.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		new(jose.SignerOptions).WithType("JWT").WithHeader("kid", "bench"))
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(signer).Claims(jwt.Claims{Subject: "alice", Issuer: "https://login.example.com/",
		Audience: jwt.Audience{"https://api.example.com"}, IssuedAt: jwt.NewNumericDate(now),
		Expiry: jwt.NewNumericDate(now.Add(24 * time.Hour))}).Serialize()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok)
}
