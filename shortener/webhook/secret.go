package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// SecretPrefix starts every serialized signing secret, as the Standard
// Webhooks specification asks, so a secret is recognised at a glance.
const SecretPrefix = "whsec_"

// Bounds of a secret's key in bytes: the specification asks for at least
// 24 bytes (192 bits) and at most 64 (512 bits).
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
	// newSecretBytes is what NewSecret draws: 256 bits, the output size
	// of SHA-256.
	newSecretBytes = 32
)

// ErrSecret is wrapped by every error of ParseSecret.
var ErrSecret = errors.New("webhook: invalid signing secret")

// Secret is an endpoint's HMAC-SHA256 signing key. Its zero value is not
// usable; make one with NewSecret or ParseSecret. String and GoString
// hide the key so that a Secret printed by mistake leaks nothing; Encode
// is the one way to the serialized form.
type Secret struct {
	key []byte
}

// NewSecret draws a fresh 32-byte key from crypto/rand.
func NewSecret() Secret {
	key := make([]byte, newSecretBytes)
	_, _ = rand.Read(key) // never fails (crypto/rand, Go 1.24+)
	return Secret{key: key}
}

// ParseSecret reads the serialized form "whsec_" + standard base64 (with
// padding) of a 24 to 64 byte key, and refuses anything else.
func ParseSecret(s string) (Secret, error) {
	b64, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return Secret{}, fmt.Errorf("%w: it must start with %q", ErrSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil {
		return Secret{}, fmt.Errorf("%w: what follows %q is not standard base64", ErrSecret, SecretPrefix)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return Secret{}, fmt.Errorf("%w: the key is %d bytes, the Standard Webhooks specification asks for %d to %d",
			ErrSecret, len(key), MinSecretBytes, MaxSecretBytes)
	}
	return Secret{key: key}, nil
}

// Encode is the serialized form ParseSecret reads: shown to the user once
// at creation and kept by the store.
func (s Secret) Encode() string {
	return SecretPrefix + base64.StdEncoding.EncodeToString(s.key)
}

// IsZero reports a Secret that holds no key.
func (s Secret) IsZero() bool { return len(s.key) == 0 }

// String hides the key.
func (s Secret) String() string { return SecretPrefix + "<hidden>" }

// GoString hides the key from %#v too.
func (s Secret) GoString() string { return "webhook.Secret{<hidden>}" }
