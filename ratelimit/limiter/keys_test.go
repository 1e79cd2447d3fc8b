package limiter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

func TestKeysStoreKey(t *testing.T) {
	digest := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:16])
	}
	tests := []struct {
		prefix, zone, tag, value string
		want                     string
	}{
		{"rl", "api", "", "key-1", "rl:api:" + digest("key-1")},
		{"rl", "api", "", "", "rl:api:" + digest("")},
		{"rl", "ip", "tenant-7", "10.0.0.1", "rl:ip:{" + digest("tenant-7") + "}" + digest("10.0.0.1")},
		{"p:x", "z", "", "a:b{c}", "p:x:z:" + digest("a:b{c}")},
	}
	for _, tt := range tests {
		if got := StoreKey(tt.prefix, tt.zone, tt.tag, tt.value); got != tt.want {
			t.Errorf("StoreKey(%q, %q, %q, %q) = %q, want %q", tt.prefix, tt.zone, tt.tag, tt.value, got, tt.want)
		}
	}
	// Raw values never reach the key, whatever they contain.
	hostile := "evil}{:value*\r\n"
	if k := StoreKey("rl", "api", hostile, hostile); strings.Contains(k, "evil") || strings.Count(k, "{") != 1 {
		t.Errorf("StoreKey with a hostile value = %q", k)
	}
	// A hash tag puts every zone of a request in one slot.
	a, b := StoreKey("rl", "api", "tenant", "k"), StoreKey("rl", "ip", "tenant", "1.2.3.4")
	if KeySlot(a) != KeySlot(b) {
		t.Errorf("keys with one hash tag in slots %d and %d", KeySlot(a), KeySlot(b))
	}
}

func TestKeysStoreKeyAllocs(t *testing.T) {
	value := strings.Repeat("a long api key value ", 10)
	for _, tag := range []string{"", "tenant"} {
		if n := testing.AllocsPerRun(100, func() { _ = StoreKey("edgekit", "api", tag, value) }); n > 1 {
			t.Errorf("StoreKey (tag %q): %.0f allocations, want 1", tag, n)
		}
	}
}

func TestSlotMatchesClusterKeyslot(t *testing.T) {
	c, _ := testenv.RedisCluster(t)
	keys := []string{
		"", "a", "foo", "123456789", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap",
		"foo{bar}{zap}", "{}", "{", "}", "a{b", "x}{y}", "{}{x}",
		StoreKey("rl", "api", "", "k"), StoreKey("rl", "api", "t", "k"), "\xff\x00\x80 binary",
	}
	for i := range 200 {
		keys = append(keys, testenv.RandomID(1+i%20))
	}
	for _, k := range keys {
		want, err := c.ClusterKeySlot(context.Background(), k).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", k, err)
		}
		if got := KeySlot(k); int64(got) != want {
			t.Errorf("KeySlot(%q) = %d, CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
	// The CRC16/XMODEM check value.
	if got := crc16("123456789"); got != 0x31C3 {
		t.Errorf("crc16(\"123456789\") = %#x, want 0x31c3", got)
	}
}
