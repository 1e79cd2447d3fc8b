package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestFaultProxy(t *testing.T) {
	p := StartFaultProxy(t, RedisAddr(t))
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, PoolSize: 2, ContextTimeoutEnabled: true})
	defer c.Close()
	ping := func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return c.Ping(ctx).Err()
	}
	if err := ping(time.Second); err != nil {
		t.Fatalf("pass: %v", err)
	}
	p.SetLatency(50 * time.Millisecond)
	if err := ping(20 * time.Millisecond); err == nil {
		t.Error("latency 50ms: a 20ms ping succeeded")
	}
	p.SetLatency(0)
	p.Set(Stalled)
	if err := ping(50 * time.Millisecond); err == nil {
		t.Error("stall: ping succeeded")
	}
	p.Set(Refuse)
	p.Cut()
	if err := ping(time.Second); err == nil {
		t.Error("refuse: ping succeeded")
	}
	p.Set(Pass)
	deadline := time.Now().Add(3 * time.Second)
	for ping(200*time.Millisecond) != nil {
		if time.Now().After(deadline) {
			t.Fatal("did not recover after Pass")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
