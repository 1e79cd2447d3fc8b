package limiter

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// Tests of the Redis store against the real Redis and Redis Cluster.

func TestRedisConcurrentExact(t *testing.T) {
	limit := Limit{Algorithm: TokenBucket, Events: 100, Window: time.Minute}
	t.Run("one store", func(t *testing.T) {
		c, prefix := testenv.Redis(t)
		a := []Ask{{Key: StoreKey(prefix, "api", "", "key-1"), Limit: limit, Cost: 1}}
		checkExactQuota(t, "500 concurrent asks", concurrentResults(t, []Store{NewRedisStore(c)}, [][]Ask{a}, 500), limit)
	})
	t.Run("three stores", func(t *testing.T) {
		c, prefix := testenv.Redis(t)
		stores := []Store{NewRedisStore(c)}
		for range 2 {
			other, _ := testenv.Redis(t) // a separate client, as another Caddy instance has
			stores = append(stores, NewRedisStore(other))
		}
		a := []Ask{{Key: StoreKey(prefix, "api", "", "key-1"), Limit: limit, Cost: 1}}
		checkExactQuota(t, "500 concurrent asks over 3 stores", concurrentResults(t, stores, [][]Ask{a}, 500), limit)
	})
	t.Run("cluster", func(t *testing.T) {
		c, prefix := testenv.RedisCluster(t)
		addrs := testenv.RedisClusterAddrs(t)
		stores := []Store{NewRedisStore(c)}
		for range 2 {
			other := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
			t.Cleanup(func() { other.Close() })
			stores = append(stores, NewRedisStore(other))
		}
		key := []Ask{{Key: StoreKey(prefix, "api", "", "key-1"), Limit: limit, Cost: 1}}
		checkExactQuota(t, "500 concurrent asks on the cluster", concurrentResults(t, stores, [][]Ask{key}, 500), limit)

		// Two zones in two slots: every decision is two calls, and a
		// refusal by the key zone refunds the tenant zone.
		tenant := Ask{Key: StoreKey(prefix, "tenant", "", "t-1"), Limit: Limit{Algorithm: SlidingLog, Events: 1000, Window: time.Hour}, Cost: 1}
		two := []Ask{{Key: StoreKey(prefix, "api", "", "key-2"), Limit: limit, Cost: 1}, tenant}
		if KeySlot(two[0].Key) == KeySlot(tenant.Key) {
			t.Logf("both zones landed in slot %d: one call per decision", KeySlot(tenant.Key))
		}
		allowed := checkExactQuota(t, "500 concurrent two-zone asks", concurrentResults(t, stores, [][]Ask{two}, 500), limit)
		res := ask1(t, stores[0], Ask{Key: tenant.Key, Limit: tenant.Limit})
		if res.Remaining != int64(1000-allowed) {
			t.Errorf("tenant zone: %d remaining after %d allowed, want %d (refused requests refunded)", res.Remaining, allowed, 1000-allowed)
		}
	})
}

func TestRedisRetryAfterMatchesWait(t *testing.T) {
	c, prefix := testenv.Redis(t)
	s := NewRedisStore(c)
	// A token a second: the second refusal below is asked well before the
	// next token, even on a loaded machine.
	a := Ask{Key: StoreKey(prefix, "api", "", "slow"), Limit: Limit{Algorithm: TokenBucket, Events: 10, Window: 10 * time.Second}, Cost: 1}
	var refused Result
	for i := 0; i < 20; i++ {
		if refused = ask1(t, s, a); !refused.Allowed {
			break
		}
	}
	if refused.Allowed || refused.RetryAfter <= 0 || refused.RetryAfter > time.Second {
		t.Fatalf("empty bucket: %+v, want refused with RetryAfter in (0, 1s]", refused)
	}
	// Asked again, the store names the same instant on its own clock.
	again := ask1(t, s, a)
	due := refused.Now.Add(refused.RetryAfter)
	if again.Allowed || !again.Now.Add(again.RetryAfter).Equal(due) {
		t.Fatalf("second refusal points at %s, first at %s", again.Now.Add(again.RetryAfter), due)
	}
	time.Sleep(time.Until(due) + time.Millisecond)
	if r := ask1(t, s, a); !r.Allowed {
		t.Fatalf("after RetryAfter: %+v, want allowed", r)
	}

	// A full bucket of 10 at 10 tokens/s: 10 of 50 pass (plus what
	// refills while the 50 are decided, a token per 100ms).
	a = Ask{Key: StoreKey(prefix, "api", "", "fast"), Limit: Limit{Algorithm: TokenBucket, Events: 10, Window: time.Second}, Cost: 1}
	var mu sync.Mutex
	var results []Result
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			r := ask1(t, s, a)
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		})
	}
	wg.Wait()
	allowed := 0
	first, last := results[0].Now, results[0].Now
	for _, r := range results {
		if r.Allowed {
			allowed++
		}
		if r.Now.Before(first) {
			first = r.Now
		}
		if r.Now.After(last) {
			last = r.Now
		}
	}
	extra := int(last.Sub(first) / (100 * time.Millisecond))
	if allowed < 10 || allowed > 10+extra {
		t.Errorf("50 asks on a full bucket: %d allowed, want 10 (+%d refilled in %s)", allowed, extra, last.Sub(first))
	}
}

// TestRedisBoundaryTrace runs bursts around a window boundary on the real
// Redis clock, checks the defining behaviour, and replays the exact trace
// (the decisions' Redis TIME) through the memory store: same results.
func TestRedisBoundaryTrace(t *testing.T) {
	c, prefix := testenv.Redis(t)
	s := NewRedisStore(c)
	redisNow, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Redis runs on this machine's clock: sleep until instants after its
	// next whole second.
	boundary := redisNow.Truncate(time.Second).Add(time.Second)
	offsets := []time.Duration{800 * time.Millisecond, 1020 * time.Millisecond, 1520 * time.Millisecond}
	asks := make([]Ask, len(allAlgorithms))
	for i, alg := range allAlgorithms {
		asks[i] = Ask{Key: StoreKey(prefix, "trace", "", alg), Limit: Limit{Algorithm: alg, Events: 10, Window: time.Second}, Cost: 1}
		if alg == LeakyBucket {
			asks[i].Limit.Burst = 9
		}
	}
	// results[algorithm][burst][request]
	results := make([][][]Result, len(allAlgorithms))
	for _, off := range offsets {
		time.Sleep(time.Until(boundary.Add(off)))
		for i, a := range asks {
			var rs []Result
			for range 10 {
				rs = append(rs, ask1(t, s, a))
			}
			results[i] = append(results[i], rs)
		}
	}
	for i, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			a, results := asks[i], results[i]
			counts := make([]int, len(results))
			var times []time.Time
			for i, rs := range results {
				for _, r := range rs {
					if r.Allowed {
						counts[i]++
						times = append(times, r.Now)
					}
				}
			}
			sameWindow := func(x, y time.Time) bool { return x.Truncate(time.Second).Equal(y.Truncate(time.Second)) }
			straddles := sameWindow(results[0][9].Now, results[0][0].Now) && !sameWindow(results[0][9].Now, results[1][0].Now) &&
				sameWindow(results[1][0].Now, results[1][9].Now)
			if !straddles {
				t.Logf("bursts did not straddle the boundary as planned (slow machine): %s %s", results[0][0].Now, results[1][9].Now)
			}
			// Across the boundary: fixed window 2×; the others events plus
			// what refills (10/s) between the bursts.
			across := counts[0] + counts[1]
			refill := int(results[1][9].Now.Sub(results[0][0].Now)/(100*time.Millisecond)) + 1
			switch alg {
			case FixedWindow:
				if straddles && across != 20 {
					t.Errorf("fixed window across a boundary: %v allowed, want 10 + 10", counts)
				}
			case SlidingLog:
				if peak := maxInWindow(times, time.Second); peak > 10 {
					t.Errorf("sliding log: %d allowed within one window (%v)", peak, counts)
				}
			default:
				if across > 10+refill {
					t.Errorf("%s across the boundary: %v allowed, want close to 10", alg, counts)
				}
			}
			t.Logf("%s: %v allowed", alg, counts)
			// Replay on the memory store at the same instants.
			clock := newTestClock(time.Time{})
			mem := NewMemoryStore(clock.Now, 0)
			for i, rs := range results {
				for j, r := range rs {
					clock.Set(r.Now)
					if m := ask1(t, mem, a); m != r {
						t.Errorf("burst %d request %d: redis %+v, memory %+v", i, j, r, m)
					}
				}
			}
		})
	}
}

// TestRedisEveryKeyHasTTL runs every algorithm — allowed, refused, checks,
// multi-zone decisions and cross-slot refunds — and requires a TTL on
// every key under the test prefix.
func TestRedisEveryKeyHasTTL(t *testing.T) {
	single, sprefix := testenv.Redis(t)
	cluster, cprefix := testenv.RedisCluster(t)
	for _, env := range []struct {
		name   string
		c      redis.UniversalClient
		prefix string
	}{{"single", single, sprefix}, {"cluster", cluster, cprefix}} {
		t.Run(env.name, func(t *testing.T) {
			s := NewRedisStore(env.c)
			for _, alg := range allAlgorithms {
				// An hour: a window ending while the keys are read would expire its key.
				l := Limit{Algorithm: alg, Events: 3, Window: time.Hour, Burst: 1}
				other := Limit{Algorithm: alg, Events: 1, Window: time.Minute}
				for i := range 6 {
					asks := []Ask{
						{Key: StoreKey(env.prefix, "a", "", alg), Limit: l, Cost: int64(i % 3)},
						{Key: StoreKey(env.prefix, "b", "", alg), Limit: other, Cost: 1},
					}
					if _, err := s.Decide(context.Background(), asks[:1+i%2]); err != nil {
						t.Fatal(err)
					}
				}
			}
			keys := 0
			check := func(ctx context.Context, n redis.UniversalClient) error {
				it := n.Scan(ctx, 0, env.prefix+"*", 100).Iterator()
				for it.Next(ctx) {
					ttl, err := n.PTTL(ctx, it.Val()).Result()
					if err != nil {
						return err
					}
					keys++
					if ttl <= 0 {
						t.Errorf("key %s has PTTL %s, want > 0", it.Val(), ttl)
					}
				}
				return it.Err()
			}
			ctx := context.Background()
			var err error
			if cc, ok := env.c.(*redis.ClusterClient); ok {
				var mu sync.Mutex
				err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
					mu.Lock()
					defer mu.Unlock()
					return check(ctx, n)
				})
			} else {
				err = check(ctx, env.c)
			}
			if err != nil {
				t.Fatal(err)
			}
			if keys != 2*len(allAlgorithms) {
				t.Errorf("%d keys under the prefix, want %d", keys, 2*len(allAlgorithms))
			}
		})
	}
}

func TestRedisScriptReloadsAfterFlush(t *testing.T) {
	srv := testenv.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	s := NewRedisStore(c)
	a := Ask{Key: "flush", Limit: Limit{Algorithm: FixedWindow, Events: 5, Window: time.Hour}, Cost: 1}
	ask1(t, s, a)
	if err := c.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if r := ask1(t, s, a); !r.Allowed || r.Remaining != 3 {
		t.Errorf("after SCRIPT FLUSH: %+v, want allowed with 3 remaining", r)
	}
}

func TestRedisErrors(t *testing.T) {
	stall := testenv.StartStall(t)
	// As redispool configures clients: deadlines come from the context.
	c := redis.NewClient(&redis.Options{Addr: stall.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	s := NewRedisStore(c)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Decide(ctx, []Ask{{Key: "k", Limit: Limit{Events: 1, Window: time.Second}, Cost: 1}})
	if err == nil || !strings.Contains(err.Error(), "ratelimit script") {
		t.Errorf("Decide on a stalled server: %v, want a script error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Decide on a stalled server took %s despite a 50ms deadline", d)
	}
	if _, err := s.Decide(context.Background(), []Ask{{Key: "k", Limit: Limit{Algorithm: "bogus", Events: 1, Window: time.Second}}}); err == nil {
		t.Error("unknown algorithm: nil error")
	}
}
