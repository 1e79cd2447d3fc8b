package limiter

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Usage per key: a fixed_window Ask with Usage keeps, per key and period,
// the units charged (net of refunds and settlements) and the requests its
// zone refused, with the key in clear, for billing. The store records it
// in the call that decides (the Redis script; no round trip more) and
// keeps a period's usage Keep after a later period's first charge (and at
// least Keep past the current period's end).

// MaxUsageKeyLen is the longest key kept in clear; a longer one, or one
// that is not UTF-8, is kept as "sha256:<hex of its digest>" (see UsageKeyText).
const MaxUsageKeyLen = 256

// Usage is what an Ask or a Settlement records of its key's usage.
type Usage struct {
	Key  string        // the key as expanded from the request (see UsageKeyText)
	Keep time.Duration // > 0: usage on; how long a period's usage is kept
}

func (u Usage) on() bool { return u.Keep > 0 }

// UsageRow is one key's usage in one period.
type UsageRow struct {
	Key      string    // the key, as UsageKeyText keeps it
	StoreKey string    // the key's store key (see StoreKey)
	Start    time.Time // the period's start
	Units    int64     // units charged in the period
	Refused  int64     // requests the zone refused in the period
}

// UsageReader is a store that lists usage.
type UsageReader interface {
	// Usage lists the usage in the period starting at start of every key
	// of zone under prefix ("<prefix>:<zone>:…"), sorted by Key.
	Usage(ctx context.Context, prefix, zone string, start time.Time) ([]UsageRow, error)
}

// UsageKey returns the store key of key's usage record, in key's Redis
// Cluster slot (as BanKey).
func UsageKey(key string) string {
	if strings.IndexByte(key, '}') >= 0 {
		return key + ":usage"
	}
	return "{" + key + "}:usage"
}

// UsageKeyText is the key as a usage record keeps it: itself, or, past
// MaxUsageKeyLen bytes or when not UTF-8, "sha256:" and the hex of its
// SHA-256.
func UsageKeyText(key string) string {
	if len(key) <= MaxUsageKeyLen && utf8.ValidString(key) {
		return key
	}
	return "sha256:" + string(AppendDigest(nil, key))
}

// appendUsage appends " u <keep ms> <hex of the key>" to an ask's burst
// argument (see usage.lua).
func appendUsage(b []byte, u Usage) []byte {
	b = append(b, " u "...)
	b = strconv.AppendInt(b, u.Keep.Milliseconds(), 10)
	b = append(b, ' ')
	return hex.AppendEncode(b, []byte(UsageKeyText(u.Key)))
}

// checkUsage checks an Ask's usage: a fixed_window quota, a positive Keep
// of at most MaxWindow.
func checkUsage(u Usage, code int) error {
	switch {
	case u == Usage{}:
		return nil
	case code != codeFixedWindow:
		return fmt.Errorf("usage needs a fixed_window quota")
	case u.Keep < time.Millisecond || u.Keep > MaxWindow:
		return fmt.Errorf("usage kept %s: from 1ms to %s", u.Keep, MaxWindow)
	}
	return nil
}

// usagePatterns are the SCAN patterns of a zone's usage keys (as
// banPatterns).
func usagePatterns(prefix, zone string) []string {
	p := globEscape(prefix + ":" + zone + ":")
	if strings.IndexByte(prefix, '}') >= 0 {
		return []string{p + "*:usage"}
	}
	return []string{"{" + p + "*}:usage", p + "{*:usage"}
}

// keyOfUsage is the store key whose usage uk holds (UsageKey's inverse).
func keyOfUsage(uk string) string {
	k := strings.TrimSuffix(uk, ":usage")
	if strings.HasPrefix(k, "{") && strings.HasSuffix(k, "}") && strings.Count(k, "}") == 1 {
		return k[1 : len(k)-1]
	}
	return k
}

// Usage implements UsageReader: a SCAN of the zone's usage keys (on every
// master of a Cluster), each read with HMGET.
func (s *RedisStore) Usage(ctx context.Context, prefix, zone string, start time.Time) ([]UsageRow, error) {
	st := strconv.FormatInt(start.UnixMicro(), 10)
	var mu sync.Mutex
	var out []UsageRow
	err := s.scanKeys(ctx, usagePatterns(prefix, zone), func(ctx context.Context, c redis.UniversalClient, uk string) (bool, error) {
		v, err := c.HMGet(ctx, uk, "k", st+":u", st+":r").Result()
		if err != nil {
			return false, err
		}
		if row, ok := usageRow(keyOfUsage(uk), start, v); ok {
			mu.Lock()
			out = append(out, row)
			mu.Unlock()
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("ratelimit usage: %w", err)
	}
	sortUsage(out)
	return out, nil
}

// usageRow reads HMGET k, <start>:u, <start>:r; false when the key has
// no usage in the period.
func usageRow(storeKey string, start time.Time, v []any) (UsageRow, bool) {
	k, _ := v[0].(string)
	u, _ := v[1].(string)
	r, _ := v[2].(string)
	if u == "" && r == "" {
		return UsageRow{}, false
	}
	units, _ := strconv.ParseInt(u, 10, 64)
	refused, _ := strconv.ParseInt(r, 10, 64)
	return UsageRow{Key: k, StoreKey: storeKey, Start: start, Units: units, Refused: refused}, true
}

func sortUsage(rows []UsageRow) {
	slices.SortFunc(rows, func(a, b UsageRow) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.StoreKey, b.StoreKey))
	})
}
