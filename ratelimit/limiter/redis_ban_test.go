package limiter

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestRedisBanNoExtraRoundTrip: on a Redis of the test's own, 50 decisions
// of a zone with a ban (allowed, refused, the ban set, refused by it) are
// 50 script calls and nothing else (INFO commandstats), and the companion
// key holding the ban has a TTL bounded by the ban plus ban_max.
func TestRedisBanNoExtraRoundTrip(t *testing.T) {
	srv := testenv.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	s := NewRedisStore(c)
	if _, err := s.Decide(ctx, []Ask{{Key: "warm", Limit: Limit{Events: 1, Window: time.Second}}}); err != nil {
		t.Fatal(err) // loads the function
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	a := Ask{Key: "rl:z:k", Limit: Limit{Algorithm: FixedWindow, Events: 5, Window: time.Minute}, Cost: 1,
		Ban: Ban{Duration: time.Minute, After: 3, Max: time.Hour}}
	var allowed, refused, set, banned int
	for range 50 {
		r := ask1(t, s, a)
		switch {
		case r.Allowed:
			allowed++
		case r.BanSet:
			set++
		case r.Banned:
			banned++
		default:
			refused++
		}
	}
	if allowed != 5 || refused != 2 || set != 1 || banned != 42 {
		t.Errorf("allowed %d, refused %d, bans set %d, banned %d; want 5, 2, 1, 42", allowed, refused, set, banned)
	}
	stats := testenv.CommandCalls(t, c)
	if got := stats["fcall"] + stats["evalsha"] + stats["eval"]; got != 50 {
		t.Errorf("%d script calls for 50 decisions, want 50 (stats %v)", got, stats)
	}
	for cmd := range stats {
		if cmd != "fcall" && cmd != "evalsha" && cmd != "eval" && cmd != "get" && cmd != "set" && cmd != "time" && cmd != "config|resetstat" {
			t.Errorf("command %s sent (stats %v): a ban must cost no call of its own", cmd, stats)
		}
	}
	ttl, err := c.PTTL(ctx, BanKey(a.Key)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > time.Minute+time.Hour+time.Second {
		t.Errorf("ban key PTTL %s, want within the ban plus ban_max (1h1m)", ttl)
	}
}

// TestBanKeySameSlot: the companion of a key without '}' or with a hash
// tag lies in the key's Cluster slot (see BanKey for the others).
func TestBanKeySameSlot(t *testing.T) {
	for _, key := range []string{"ratelimit:z:0123", "ratelimit:z:{abc}0123", "p{:z:x", "{a}b}c"} {
		if bk := BanKey(key); KeySlot(bk) != KeySlot(key) {
			t.Errorf("BanKey(%q) = %q: slot %d, want the key's %d", key, bk, KeySlot(bk), KeySlot(key))
		}
	}
}
