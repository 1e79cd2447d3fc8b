package jwtkey

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// jwksServer serves the test JWKS over HTTPS, rotated or not, or fails.
type jwksServer struct {
	*httptest.Server
	rotated, failing atomic.Bool
	hits             atomic.Int32
}

func newJWKSServer(t *testing.T, k *testKeys) *jwksServer {
	t.Helper()
	s := new(jwksServer)
	plain, rotated := k.jwks(t, false), k.jwks(t, true)
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		switch {
		case s.failing.Load():
			http.Error(w, "down", http.StatusBadGateway)
		case s.rotated.Load():
			_, _ = w.Write(rotated)
		default:
			_, _ = w.Write(plain)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// urlOptions are the test options with the server's JWKS instead of the file.
func (s *jwksServer) urlOptions(t *testing.T, k *testKeys) Options {
	opts := k.options(t)
	opts.JWKSFile, opts.JWKSURL, opts.Client = "", s.URL+"/jwks.json", s.Client()
	return opts
}

// The background refresh picks up a rotated key: the old key's tokens stop
// verifying (even from the cache), the new one's start.
func TestJWTRefreshPicksUpRotatedKey(t *testing.T) {
	k := tk(t)
	srv := newJWKSServer(t, k)
	opts := srv.urlOptions(t, k)
	opts.Refresh = MinRefresh
	var changes atomic.Int32
	opts.OnRefresh = func(changed bool, err error) {
		if changed {
			changes.Add(1)
		}
	}
	v := newVerifier(t, opts)
	old := k.rs256(t, claims("alice", nil))
	if _, err := v.Verify(old, now); err != nil {
		t.Fatal(err)
	}
	v.Start(t.Context())
	defer v.Stop()
	srv.rotated.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for changes.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	rotated := sign(t, jose.RS256, k.rsa2, "rsa2", claims("alice", nil))
	// early refreshes are bounded by now: this one is long past the last
	if _, err := v.Verify(rotated, now); err != nil {
		t.Errorf("token of the rotated key: %v", err)
	}
	if _, err := v.Verify(old, now); err == nil {
		t.Errorf("token of the removed key still verifies")
	}
}

// An unknown kid loads the JWKS at once, at most once per 10 s; a failed
// load keeps the last good keys.
func TestJWTUnknownKidEarlyRefresh(t *testing.T) {
	k := tk(t)
	srv := newJWKSServer(t, k)
	v := newVerifier(t, srv.urlOptions(t, k)) // no Start: no background refresh
	if got := srv.hits.Load(); got != 1 {
		t.Fatalf("hits after Load = %d, want 1", got)
	}
	srv.rotated.Store(true)
	rotated := sign(t, jose.RS256, k.rsa2, "rsa2", claims("alice", nil))
	if _, err := v.Verify(rotated, now); err != nil {
		t.Fatalf("rotated key after an early refresh: %v", err)
	}
	unknown := sign(t, jose.RS256, k.rsa2, "nope", claims("alice", nil))
	for i := range 50 { // within 10 s of the early refresh: no load
		if _, err := v.Verify(unknown, now.Add(time.Duration(i)*100*time.Millisecond)); err == nil {
			t.Fatal("unknown kid verified")
		}
	}
	if got := srv.hits.Load(); got != 2 {
		t.Errorf("hits = %d, want 2 (one early refresh per 10 s)", got)
	}
	srv.failing.Store(true)
	_, _ = v.Verify(unknown, now.Add(11*time.Second))
	if got := srv.hits.Load(); got != 3 {
		t.Errorf("hits = %d, want 3 (10 s later, one more)", got)
	}
	if _, err := v.Verify(rotated, now.Add(11*time.Second)); err != nil {
		t.Errorf("after a failed load, the last good keys: %v", err)
	}
}

// Concurrent tokens of an unknown kid share one early load.
func TestJWTEarlyRefreshShared(t *testing.T) {
	k := tk(t)
	srv := newJWKSServer(t, k)
	v := newVerifier(t, srv.urlOptions(t, k))
	unknown := sign(t, jose.RS256, k.rsa2, "nope", claims("alice", nil))
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { _, _ = v.Verify(unknown, now) })
	}
	wg.Wait()
	if got := srv.hits.Load(); got != 2 {
		t.Errorf("hits = %d, want 2", got)
	}
}

// A jwks_file is read again on each load.
func TestJWTFileReread(t *testing.T) {
	k := tk(t)
	opts := k.options(t)
	v := newVerifier(t, opts)
	rotated := sign(t, jose.RS256, k.rsa2, "rsa2", claims("alice", nil))
	if err := os.WriteFile(opts.JWKSFile, k.jwks(t, true), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(rotated, now); err != nil {
		t.Errorf("after the file changed: %v", err)
	}
	if err := os.WriteFile(opts.JWKSFile, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Load(t.Context()); err == nil {
		t.Error("Load of a broken file succeeded")
	}
	if _, err := v.Verify(rotated, now); err != nil {
		t.Errorf("a broken file keeps the last good keys: %v", err)
	}
}

func TestJWTKeySetBounds(t *testing.T) {
	k := tk(t)
	var many jose.JSONWebKeySet
	for i := range MaxKeys + 1 {
		many.Keys = append(many.Keys, jose.JSONWebKey{Key: k.ed.Public(), KeyID: fmt.Sprint(i)})
	}
	manyDoc, _ := json.Marshal(many)
	oct, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: k.secret, KeyID: "hmac"}}})
	enc, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.rsa.PublicKey, KeyID: "e", Use: "enc"}}})
	tests := []struct {
		name, doc, want string
	}{
		{"too many keys", string(manyDoc), "more than 100"},
		{"too large", `{"keys":[],"pad":"` + strings.Repeat("x", MaxJWKSBytes) + `"}`, "larger than"},
		{"symmetric keys only", string(oct), "no usable"},
		{"encryption keys only", string(enc), "no usable"},
		{"not JSON", "<html>", "parsing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := t.TempDir() + "/jwks.json"
			if err := os.WriteFile(p, []byte(tt.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			v, err := New(Options{JWKSFile: p})
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Load(context.Background()); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %v, want %q", err, tt.want)
			}
		})
	}
}
