package ratelimit

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

func TestCheckBrake(t *testing.T) {
	for _, tt := range []struct {
		f   float64
		ttl time.Duration
		err string
	}{
		{0.1, time.Minute, ""},
		{1, time.Second, ""},
		{0, time.Minute, "invalid brake factor"},
		{-0.5, time.Minute, "invalid brake factor"},
		{1.5, time.Minute, "invalid brake factor"},
		{math.NaN(), time.Minute, "invalid brake factor"},
		{0.5, 0, "invalid brake ttl"},
	} {
		err := checkBrake(tt.f, tt.ttl)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("checkBrake(%v, %v) = %v, want %q", tt.f, tt.ttl, err, tt.err)
		}
	}
}

func TestBraked(t *testing.T) {
	for _, tt := range []struct {
		in   limiter.Limit
		f    float64
		want limiter.Limit
	}{
		{limiter.Limit{Algorithm: limiter.TokenBucket, Events: 100, Window: time.Minute}, 0.1, limiter.Limit{Algorithm: limiter.TokenBucket, Events: 10, Window: time.Minute}},
		{limiter.Limit{Algorithm: limiter.TokenBucket, Events: 100, Window: time.Minute}, 0.7, limiter.Limit{Algorithm: limiter.TokenBucket, Events: 70, Window: time.Minute}},
		{limiter.Limit{Algorithm: limiter.TokenBucket, Events: 10, Burst: 25, Window: time.Second}, 0.5, limiter.Limit{Algorithm: limiter.TokenBucket, Events: 5, Burst: 13, Window: time.Second}},
		{limiter.Limit{Algorithm: limiter.FixedWindow, Events: 3, Window: time.Second}, 0.01, limiter.Limit{Algorithm: limiter.FixedWindow, Events: 1, Window: time.Second}},
		{limiter.Limit{Algorithm: limiter.LeakyBucket, Events: 10, Burst: 4, Window: time.Second}, 0.5, limiter.Limit{Algorithm: limiter.LeakyBucket, Events: 5, Burst: 4, Window: time.Second}},
		{limiter.Limit{Algorithm: limiter.SlidingLog, Events: 7, Window: time.Second}, 1, limiter.Limit{Algorithm: limiter.SlidingLog, Events: 7, Window: time.Second}},
	} {
		if got := braked(tt.in, tt.f); got != tt.want {
			t.Errorf("braked(%+v, %v) = %+v, want %+v", tt.in, tt.f, got, tt.want)
		}
	}
}

func TestRedisBrake(t *testing.T) {
	c, prefix := testenv.Redis(t)
	ctx := context.Background()
	b := newRedisBrake(c, prefix)
	if f, err := b.get(ctx); err != nil || f != 1 {
		t.Fatalf("get() with no brake = %v, %v; want 1", f, err)
	}
	if err := b.set(ctx, 0.25, time.Minute); err != nil {
		t.Fatal(err)
	}
	if f, err := b.get(ctx); err != nil || f != 0.25 {
		t.Errorf("get() = %v, %v; want 0.25", f, err)
	}
	if ttl := c.PTTL(ctx, prefix+":brake").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("brake key TTL = %v, want (0, 1m]", ttl)
	}
	if err := b.clear(ctx); err != nil {
		t.Fatal(err)
	}
	if f, err := b.get(ctx); err != nil || f != 1 {
		t.Errorf("get() after clear = %v, %v; want 1", f, err)
	}
	// A value nobody could have set through the API is ignored.
	c.Set(ctx, prefix+":brake", "7", time.Minute)
	if f, err := b.get(ctx); err == nil || f != 1 {
		t.Errorf("get() of an invalid brake = %v, %v; want 1 and an error", f, err)
	}
}

func TestMemoryBrakeExpires(t *testing.T) {
	clk := newClock()
	b := &memoryBrake{now: clk.Now}
	ctx := context.Background()
	_ = b.set(ctx, 0.5, time.Minute)
	if f, _ := b.get(ctx); f != 0.5 {
		t.Errorf("get() = %v, want 0.5", f)
	}
	clk.Add(time.Minute)
	if f, _ := b.get(ctx); f != 1 {
		t.Errorf("get() after the TTL = %v, want 1", f)
	}
	_ = b.set(ctx, 0.5, time.Minute)
	_ = b.clear(ctx)
	if f, _ := b.get(ctx); f != 1 {
		t.Errorf("get() after clear = %v, want 1", f)
	}
}

// TestBrakeCachesFollowRedis: three caches on one Redis (three Caddy
// instances) apply a brake set elsewhere within a second, keep the last
// factor while Redis is unreachable, and drop it when cleared.
func TestBrakeCachesFollowRedis(t *testing.T) {
	srv := testenv.StartRedis(t)
	prefix := "brake-" + testenv.RandomID(4)
	var caches []*brakeCache
	for range 3 {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		b := newBrakeCache(context.Background(), newRedisBrake(c, prefix), zap.NewNop())
		t.Cleanup(b.close)
		caches = append(caches, b)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { admin.Close() })
	ctx := context.Background()
	all := func(f float64) func() bool {
		return func() bool {
			for _, b := range caches {
				if b.factor() != f {
					return false
				}
			}
			return true
		}
	}
	if !all(1)() {
		t.Fatal("a brake before any was set")
	}
	if err := newRedisBrake(admin, prefix).set(ctx, 0.1, time.Minute); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, 2*time.Second, "brake on three instances", all(0.1))
	if took > time.Second+200*time.Millisecond {
		t.Errorf("brake reached every instance after %v, want within 1s", took)
	}

	srv.Stop()
	time.Sleep(2 * brakeRefresh)
	if !all(0.1)() {
		t.Error("the brake was dropped while Redis was unreachable")
	}
	srv.Start()
	if err := newRedisBrake(admin, prefix).clear(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "brake cleared on three instances", all(1))
}
