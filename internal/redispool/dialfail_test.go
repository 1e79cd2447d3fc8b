package redispool

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// A pool that saw pool_size failed dials: with OwnBreaker it dials again
// as soon as asked once the server answers (go-redis alone answers the
// last error for up to a second), and a refused dial is still a dial's
// error (*net.OpError, op "dial") to the caller.
func TestOwnBreakerPoolDialsAgainAtOnce(t *testing.T) {
	srv := testenv.StartRedis(t)
	for _, own := range []bool{false, true} {
		cfg := Config{URL: srv.URL(), PoolSize: 2, OwnBreaker: own}
		c, err := Get(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("own breaker %v: PING with the server up: %v", own, err)
		}
		srv.Stop()
		for i := range 6 {
			err := c.Ping(ctx).Err()
			var op *net.OpError
			if err == nil {
				t.Fatalf("own breaker %v: PING #%d with the server down answered", own, i+1)
			}
			if own && !(errors.As(err, &op) && op.Op == "dial") {
				t.Errorf("own breaker %v: PING #%d: %v (%T), want a dial's *net.OpError", own, i+1, err, err)
			}
		}
		srv.Start()
		start := time.Now()
		err = c.Ping(ctx).Err()
		t.Logf("own breaker %v: first PING after the restart: %v after %v", own, err, time.Since(start))
		if own && err != nil {
			t.Errorf("own breaker: first PING after the restart: %v, want an answer", err)
		}
		if err := c.Release(); err != nil {
			t.Error(err)
		}
	}
}

// The two kinds of client are not shared: same config, different keys.
func TestOwnBreakerClientOfItsOwn(t *testing.T) {
	a := Config{URL: "redis://127.0.0.1:1/0"}
	b := a
	b.OwnBreaker = true
	if a.Key() == b.Key() {
		t.Error("a client with OwnBreaker shares its pool key with one without")
	}
}
