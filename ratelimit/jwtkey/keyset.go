package jwtkey

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// keySet is one load of the JWKS: immutable once published.
type keySet struct {
	keys []verifyKey
	gen  uint64   // increments when the keys change; 0: none loaded yet
	fp   [32]byte // what the keys are, to tell a change
}

// verifyKey is one public key of the set.
type verifyKey struct {
	kid string
	alg string // "" any the key type suits
	key any    // *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
}

// Load loads the JWKS once (a no-op without one). A failure keeps the keys
// last loaded; the caller decides whether a first failure is fatal.
func (v *Verifier) Load(ctx context.Context) error {
	if v.opts.JWKSFile == "" && v.opts.JWKSURL == "" {
		return nil
	}
	v.loadMu.Lock()
	defer v.loadMu.Unlock()
	doc, err := v.read(ctx)
	var set *keySet
	if err == nil {
		set, err = parseKeySet(doc)
	}
	changed := false
	if err == nil {
		old := v.keys.Load()
		if changed = set.fp != old.fp || old.gen == 0; changed {
			set.gen = old.gen + 1
			v.keys.Store(set)
			v.cache.clear()
		}
	}
	if v.opts.OnRefresh != nil {
		v.opts.OnRefresh(changed, err)
	}
	return err
}

// read reads the JWKS document, at most MaxJWKSBytes.
func (v *Verifier) read(ctx context.Context) ([]byte, error) {
	if v.opts.JWKSFile != "" {
		f, err := os.Open(v.opts.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("reading jwks_file: %w", err)
		}
		defer f.Close()
		return readBounded(f)
	}
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.opts.JWKSURL, nil)
	if err != nil {
		return nil, fmt.Errorf("fetching jwks_url: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	res, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching jwks_url: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching jwks_url: status %d", res.StatusCode)
	}
	return readBounded(res.Body)
}

// readBounded reads r whole, failing past MaxJWKSBytes.
func readBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the JWKS: %w", err)
	}
	if len(b) > MaxJWKSBytes {
		return nil, fmt.Errorf("the JWKS is larger than %d bytes", MaxJWKSBytes)
	}
	return b, nil
}

// parseKeySet parses a JWKS document: at most MaxKeys keys, of which those
// for signatures (`use` absent or `sig`) that are RSA (>= MinRSABits), EC
// or Ed25519 public keys are kept (the public half of a private key);
// symmetric keys never are. At least one must be kept.
func parseKeySet(doc []byte) (*keySet, error) {
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("parsing the JWKS: %w", err)
	}
	if len(raw.Keys) > MaxKeys {
		return nil, fmt.Errorf("the JWKS has %d keys, more than %d", len(raw.Keys), MaxKeys)
	}
	set := new(keySet)
	fp := sha256.New()
	for _, r := range raw.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(r); err != nil || k.Use != "" && k.Use != "sig" {
			continue
		}
		pub := k.Public()
		if !usable(pub.Key) {
			continue
		}
		thumb, err := pub.Thumbprint(crypto.SHA256)
		if err != nil {
			continue
		}
		set.keys = append(set.keys, verifyKey{kid: k.KeyID, alg: k.Algorithm, key: pub.Key})
		fmt.Fprintf(fp, "%q %q %x\n", k.KeyID, k.Algorithm, thumb)
	}
	if len(set.keys) == 0 {
		return nil, errors.New("the JWKS has no usable signature key")
	}
	copy(set.fp[:], fp.Sum(nil))
	return set, nil
}

// usable reports whether key is a public key of a type and size verified.
func usable(key any) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return k.N.BitLen() >= MinRSABits
	case *ecdsa.PublicKey:
		return k.Curve == elliptic.P256() || k.Curve == elliptic.P384() || k.Curve == elliptic.P521()
	case ed25519.PublicKey:
		return len(k) == ed25519.PublicKeySize
	}
	return false
}

// Start loads the JWKS again every Refresh until ctx ends or Stop is
// called (a no-op without a JWKS).
func (v *Verifier) Start(ctx context.Context) {
	if v.opts.JWKSFile == "" && v.opts.JWKSURL == "" || v.stop != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	v.stop, v.stopped = cancel, make(chan struct{})
	go func() {
		defer close(v.stopped)
		t := time.NewTicker(v.opts.Refresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = v.Load(ctx) // reported through OnRefresh
			}
		}
	}()
}

// Stop ends the refreshes Start began and waits for the one running.
func (v *Verifier) Stop() {
	if v.stop == nil {
		return
	}
	v.stop()
	<-v.stopped
	v.stop = nil
}

// refreshEarly loads the JWKS now for a token whose key the set lacks, at
// most once per EarlyRefreshEvery (by now): a rotated key is picked up
// without waiting for the next refresh. A caller arriving while such a
// load runs waits for it. It reports whether the keys may have changed.
func (v *Verifier) refreshEarly(now time.Time) bool {
	if v.opts.JWKSFile == "" && v.opts.JWKSURL == "" {
		return false
	}
	v.early.Lock()
	if running := v.early.running; running != nil {
		v.early.Unlock()
		<-running
		return true
	}
	if !v.early.last.IsZero() && now.Sub(v.early.last) < EarlyRefreshEvery && now.Sub(v.early.last) > -EarlyRefreshEvery {
		v.early.Unlock()
		return false
	}
	v.early.last = now
	running := make(chan struct{})
	v.early.running = running
	v.early.Unlock()
	_ = v.Load(context.Background()) // reported through OnRefresh
	v.early.Lock()
	v.early.running = nil
	v.early.Unlock()
	close(running)
	return true
}

// httpsRedirects follows at most 3 redirects, to HTTPS only.
func httpsRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errors.New("too many redirects")
	}
	if req.URL.Scheme != "https" {
		return errors.New("redirect to a URL that is not https")
	}
	return nil
}
