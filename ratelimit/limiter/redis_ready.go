package limiter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrNotReady is the error of a decision that found no connection to the
// store: a dial failed or the pool had none to give. Nothing was sent: it
// says the store is not reachable, not that a decision failed.
var ErrNotReady = errors.New("store not ready: no connection")

// notReady wraps err with ErrNotReady when it is a connection's failure
// to be had rather than a decision's.
func notReady(err error) error {
	if err == nil || errors.Is(err, ErrNotReady) {
		return err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	return err
}

// ReadyStore is a store that can tell whether it is reachable again after
// an outage and make its connections ready before decisions return.
type ReadyStore interface {
	// Probe checks that the store answers PING on a new connection of its
	// own, within the client's dial and read timeouts (not a decision's)
	// and ctx, never through the pool that decides: after failed dials
	// that pool may refuse to dial for a while. A failed dial is
	// ErrNotReady.
	Probe(ctx context.Context) error
	// Warm makes the pool hold at least n idle connections (on a cluster,
	// to every master), dialling them at once, and the server hold the
	// decision's code, bounded by ctx.
	Warm(ctx context.Context, n int) error
}

// Probe implements ReadyStore with a client of its own, closed on return,
// built from the store's client's options (same servers, credentials,
// TLS and dialer; for Sentinel, the same master lookup).
func (s *RedisStore) Probe(ctx context.Context) error {
	var c redis.UniversalClient
	switch sc := s.c.(type) {
	case *redis.Client:
		o := *sc.Options()
		o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 2, 0, 0, 0
		o.MaxRetries, o.DialerRetries = -1, 1
		o.ContextTimeoutEnabled = false
		o.PushNotificationProcessor = nil // the store's: its handlers are registered
		c = redis.NewClient(&o)
	case *redis.ClusterClient:
		o := *sc.Options()
		o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 2, 0, 0, 0
		o.MaxRetries, o.DialerRetries = -1, 1
		o.ContextTimeoutEnabled = false
		o.PushNotificationProcessor = nil // the store's: its handlers are registered
		c = redis.NewClusterClient(&o)
	default:
		c = s.c
	}
	err := c.Ping(ctx).Err()
	if c != s.c {
		_ = c.Close()
	}
	return notReady(err)
}

// Warm implements ReadyStore: n connections taken from the pool at once,
// each checked with PING, then given back together; then the decision's
// library (or script) is loaded where it is missing.
func (s *RedisStore) Warm(ctx context.Context, n int) error {
	var err error
	switch c := s.c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return warmClient(ctx, c, n)
		})
	case *redis.Client:
		err = warmClient(ctx, c, n)
	default:
		err = c.Ping(ctx).Err()
	}
	if err == nil {
		err = s.co.calls.prepare(ctx)
	}
	return notReady(err)
}

// warmClient takes n connections of c's pool at once and gives them back.
func warmClient(ctx context.Context, c *redis.Client, n int) error {
	if idle := int(c.PoolStats().IdleConns); idle >= n {
		return c.Ping(ctx).Err()
	}
	conns := make([]*redis.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range conns {
		conns[i] = c.Conn()
		wg.Go(func() { errs[i] = conns[i].Ping(ctx).Err() })
	}
	wg.Wait()
	for _, cn := range conns {
		_ = cn.Close() // back to the pool
	}
	return errors.Join(errs...)
}
