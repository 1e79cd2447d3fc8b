package limiter

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// BanInfo is one ban in force.
type BanInfo struct {
	Key   string        // the store key banned (see StoreKey)
	Left  time.Duration // the ban's remainder
	Level int64         // bans set on the key so far (the next doubles)
}

// Banner is a store that lists and lifts bans (see Ask.Ban).
type Banner interface {
	// Bans lists at most max bans in force among the keys of zone under
	// prefix ("<prefix>:<zone>:…").
	Bans(ctx context.Context, prefix, zone string, max int) ([]BanInfo, error)
	// LiftBan forgets the ban state of the store key key: its next
	// request is decided by its quota alone, and a further ban starts over
	// at the first duration.
	LiftBan(ctx context.Context, key string) error
}

// parseBanState parses the script's "<count> <since> <until> <level>".
func parseBanState(v string) (banState, bool) {
	var st banState
	n, err := fmt.Sscanf(v, "%d %d %d %d", &st.count, &st.since, &st.until, &st.level)
	return st, err == nil && n == 4
}

// globEscape escapes the Redis glob characters of s.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// banPatterns are the SCAN patterns of a zone's ban keys (see BanKey): a
// prefix holding a hash tag gives every key of the zone one, so each ban
// key is the key + ":ban"; otherwise keys without a hash tag have theirs
// put around them, and keys with one (after the zone) keep it.
func banPatterns(prefix, zone string) []string {
	p := globEscape(prefix + ":" + zone + ":")
	if strings.IndexByte(prefix, '}') >= 0 {
		return []string{p + "*:ban"}
	}
	return []string{"{" + p + "*}:ban", p + "{*:ban"}
}

// Bans implements Banner: a SCAN of the zone's ban keys (on every master
// of a Cluster), each read with GET.
func (s *RedisStore) Bans(ctx context.Context, prefix, zone string, max int) ([]BanInfo, error) {
	t, err := s.c.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("ratelimit bans: %w", err)
	}
	now := t.UnixMicro()
	var mu sync.Mutex
	var out []BanInfo
	err = s.scanKeys(ctx, banPatterns(prefix, zone), func(ctx context.Context, c redis.UniversalClient, bk string) (bool, error) {
		v, err := c.Get(ctx, bk).Result()
		if err != nil {
			return false, nil // expired since the scan
		}
		st, ok := parseBanState(v)
		if !ok || st.left(now) <= 0 {
			return false, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if len(out) >= max {
			return true, nil
		}
		out = append(out, BanInfo{Key: keyOfBan(bk), Left: time.Duration(st.left(now)) * time.Microsecond, Level: st.level})
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("ratelimit bans: %w", err)
	}
	return out, nil
}

// scanKeys calls each for every key matching one of patterns, on every
// master of a Cluster (concurrently) or on the one server, until each
// says stop (for its server) or fails.
func (s *RedisStore) scanKeys(ctx context.Context, patterns []string,
	each func(ctx context.Context, c redis.UniversalClient, key string) (stop bool, err error)) error {
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		for _, pat := range patterns {
			it := c.Scan(ctx, 0, pat, 1000).Iterator()
			for it.Next(ctx) {
				if stop, err := each(ctx, c, it.Val()); stop || err != nil {
					return err
				}
			}
			if err := it.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	}
	return scan(ctx, s.c)
}

// keyOfBan is the store key whose ban state bk holds (BanKey's inverse).
func keyOfBan(bk string) string {
	k := strings.TrimSuffix(bk, ":ban")
	if strings.HasPrefix(k, "{") && strings.HasSuffix(k, "}") && strings.Count(k, "}") == 1 {
		return k[1 : len(k)-1]
	}
	return k
}

// LiftBan implements Banner.
func (s *RedisStore) LiftBan(ctx context.Context, key string) error {
	if err := s.c.Del(ctx, BanKey(key)).Err(); err != nil {
		return fmt.Errorf("ratelimit lift ban: %w", err)
	}
	return nil
}

// Bans implements Banner.
func (s *MemoryStore) Bans(ctx context.Context, prefix, zone string, max int) ([]BanInfo, error) {
	now := s.now().UnixMicro()
	head := prefix + ":" + zone + ":"
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []BanInfo
	for bk, e := range s.keys {
		if len(out) >= max {
			break
		}
		if e.code != codeBan || !e.ok || now >= e.expireAt || e.bans.left(now) <= 0 {
			continue
		}
		if k := keyOfBan(bk); strings.HasPrefix(k, head) {
			out = append(out, BanInfo{Key: k, Left: time.Duration(e.bans.left(now)) * time.Microsecond, Level: e.bans.level})
		}
	}
	return out, ctx.Err()
}

// LiftBan implements Banner.
func (s *MemoryStore) LiftBan(ctx context.Context, key string) error {
	return s.Reset(ctx, BanKey(key))
}

// Bans implements Banner.
func (m *ZoneMemory) Bans(ctx context.Context, prefix, zone string, max int) ([]BanInfo, error) {
	if p := m.zones[zone]; p != nil {
		return p.Bans(ctx, prefix, zone, max)
	}
	return nil, ctx.Err()
}

// LiftBan implements Banner.
func (m *ZoneMemory) LiftBan(ctx context.Context, key string) error {
	if p := m.part(key); p != nil {
		return p.LiftBan(ctx, key)
	}
	return ctx.Err()
}

var (
	_ Banner = (*RedisStore)(nil)
	_ Banner = (*MemoryStore)(nil)
	_ Banner = (*ZoneMemory)(nil)
)
