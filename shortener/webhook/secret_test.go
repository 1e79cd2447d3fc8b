package webhook

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestNewSecretRoundTrips(t *testing.T) {
	s := NewSecret()
	enc := s.Encode()
	if !strings.HasPrefix(enc, SecretPrefix) {
		t.Fatalf("Encode() = %q, want the prefix %q", enc, SecretPrefix)
	}
	back, err := ParseSecret(enc)
	if err != nil {
		t.Fatalf("ParseSecret(Encode()): %v", err)
	}
	if back.Encode() != enc {
		t.Errorf("ParseSecret(%q).Encode() = %q", enc, back.Encode())
	}
	if NewSecret().Encode() == enc {
		t.Error("two NewSecret() are equal")
	}
}

func TestParseSecretRefuses(t *testing.T) {
	key := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "must start with"},
		{"no prefix", key(32), "must start with"},
		{"other prefix", "whsk_" + key(32), "must start with"},
		{"upper-case prefix", "WHSEC_" + key(32), "must start with"},
		{"not base64", SecretPrefix + "not base64!", "not standard base64"},
		{"url-safe base64", SecretPrefix + strings.Repeat("-_", 16), "not standard base64"},
		{"unpadded", SecretPrefix + strings.TrimRight(key(25), "="), "not standard base64"},
		{"trailing space", SecretPrefix + key(32) + " ", "not standard base64"},
		{"too short", SecretPrefix + key(23), "23 bytes"},
		{"too long", SecretPrefix + key(65), "65 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSecret(tc.in)
			if !errors.Is(err, ErrSecret) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseSecret(%q) = %v, want ErrSecret saying %q", tc.in, err, tc.want)
			}
		})
	}
	for _, n := range []int{MinSecretBytes, 32, MaxSecretBytes} {
		if _, err := ParseSecret(SecretPrefix + key(n)); err != nil {
			t.Errorf("ParseSecret(%d-byte key) = %v", n, err)
		}
	}
}

func TestSecretHidesItsKey(t *testing.T) {
	s := NewSecret()
	key := strings.TrimPrefix(s.Encode(), SecretPrefix)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s), fmt.Sprint([]Secret{s})} {
		if strings.Contains(out, key) {
			t.Errorf("printing a Secret shows its key: %s", out)
		}
	}
}
