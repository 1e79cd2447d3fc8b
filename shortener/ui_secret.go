package shortener

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
)

// The keys that sign dashboard session cookies. They are derived (HKDF
// with SHA-256) from a secret the link store never holds: ui_secret
// (placeholders such as {env.SHORTENER_UI_SECRET} expanded at provision)
// or the file ui_secret_file; with neither, a random secret kept in a
// file of Caddy's data directory, which only this machine's instances
// share. ui_previous_secret verifies cookies signed before a rotation,
// never signs one.

// MinUISecretLen is the shortest ui_secret that loads: 256 bits.
const MinUISecretLen = 32

// uiSecretFile is where, under Caddy's data directory, the generated
// secret is kept.
var uiSecretFile = filepath.Join("edgekit", "shortener_ui_session.key")

// signingKey signs (or verifies) cookies and CSRF tokens.
type signingKey struct {
	cookie [32]byte
	csrf   [32]byte
	id     [8]byte // what a session record names its signer by
}

// deriveKey is the signing key of secret.
func deriveKey(secret []byte) signingKey {
	var k signingKey
	for _, out := range []struct {
		dst  []byte
		info string
	}{{k.cookie[:], "edgekit shortener ui session cookie v2"}, {k.csrf[:], "edgekit shortener ui csrf v2"}} {
		b, _ := hkdf.Key(sha256.New, secret, nil, out.info, len(out.dst)) // fails only for lengths over 255*32
		copy(out.dst, b)
	}
	m := hmac.New(sha256.New, k.cookie[:])
	m.Write([]byte("key id"))
	copy(k.id[:], m.Sum(nil))
	return k
}

// signingKeys are the current key and, during a rotation, the previous.
type signingKeys struct {
	current  signingKey
	previous *signingKey
}

// all is the keys that verify, the current first.
func (s *signingKeys) all() []*signingKey {
	if s.previous == nil {
		return []*signingKey{&s.current}
	}
	return []*signingKey{&s.current, s.previous}
}

// checkUISecret judges a secret as expanded (never printing it).
func checkUISecret(field string, v []byte) error {
	if len(v) < MinUISecretLen {
		return fmt.Errorf("%s is %d bytes long; at least %d are required", field, len(v), MinUISecretLen)
	}
	return nil
}

// loadSigningKeys reads the secrets: expanded with repl, read from their
// file, or generated under dataDir.
func (h *Handler) loadSigningKeys(repl *caddy.Replacer, dataDir string) (signingKeys, error) {
	var secret []byte
	var err error
	switch {
	case h.UISecret != "":
		secret = []byte(repl.ReplaceKnown(h.UISecret, ""))
		err = checkUISecret("ui_secret", secret)
	case h.UISecretFile != "":
		secret, err = readSecretFile(repl.ReplaceKnown(h.UISecretFile, ""))
	default:
		var path string
		secret, path, err = dataDirSecret(dataDir)
		if err == nil {
			h.logger.Info("dashboard sessions are signed with a key kept in Caddy's data directory: instances that serve one site behind a load balancer need a shared ui secret",
				zap.String("file", path))
		}
	}
	if err != nil {
		return signingKeys{}, fmt.Errorf("shortener: %w", err)
	}
	keys := signingKeys{current: deriveKey(secret)}
	// A previous secret that expands to nothing is none: the placeholder
	// may stay in the config between rotations.
	if prev := []byte(repl.ReplaceKnown(h.UIPreviousSecret, "")); len(prev) > 0 {
		if err := checkUISecret("ui_previous_secret", prev); err != nil {
			return signingKeys{}, fmt.Errorf("shortener: %w", err)
		}
		if hmac.Equal(prev, secret) {
			return signingKeys{}, errors.New("shortener: ui_previous_secret is the current secret")
		}
		k := deriveKey(prev)
		keys.previous = &k
	}
	return keys, nil
}

// readSecretFile reads ui_secret_file: its content without the trailing
// line break.
func readSecretFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ui_secret_file: %w", err)
	}
	b = []byte(strings.TrimRight(string(b), "\r\n"))
	return b, checkUISecret("ui_secret_file "+path, b)
}

// dataDirSecret reads the generated secret under dir, creating it (mode
// 0600, directory 0700) if no instance has: written whole to a temporary
// file, then linked into place, so a concurrent start reads either none
// or all of it, and the first link wins.
func dataDirSecret(dir string) ([]byte, string, error) {
	path := filepath.Join(dir, uiSecretFile)
	if b, err := os.ReadFile(path); err == nil {
		return b, path, checkUISecret(path, b)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, path, fmt.Errorf("reading the dashboard's signing secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, path, fmt.Errorf("creating the dashboard's signing secret: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ui_session-*.key")
	if err != nil {
		return nil, path, fmt.Errorf("creating the dashboard's signing secret: %w", err)
	}
	defer os.Remove(tmp.Name())
	secret := make([]byte, MinUISecretLen)
	_, _ = rand.Read(secret) // never fails (crypto/rand panics rather)
	_, err = tmp.Write(secret)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err == nil {
		if err = os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
			return dataDirSecret(dir) // another instance's came first
		}
	}
	if err != nil {
		return nil, path, fmt.Errorf("creating the dashboard's signing secret: %w", err)
	}
	return secret, path, nil
}
