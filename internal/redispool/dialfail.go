package redispool

import (
	"context"
	"net"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// A go-redis pool that has seen pool_size failed dials stops dialling: it
// answers every later dial with the last error and tries one dial a second
// in the background (go-redis issue 3062). After an outage a client then
// stays unusable for up to a second after its server answers again, and
// after a Sentinel failover for up to a second after the sentinels name
// the new primary. A module with a circuit breaker and a probe of its own
// (the rate limiter) needs its pool to dial as soon as it is asked:
// Config.OwnBreaker gives it a dialer whose failures the pool never sees
// as such. A failed dial returns a connection that fails its first read or
// write with the dial's error: the command fails with that error (the
// caller still sees a refused dial), go-redis discards the connection, and
// the next command dials again.

// deferDialErrors wraps dial so that its failures surface on the
// connection's first use.
func deferDialErrors(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return &failedConn{err: dialFailed{err}, addr: dialAddr{network, addr}}, nil
		}
		return c, nil
	}
}

// baseDialer is the dialer go-redis would use for opts (TLS when set),
// but for a Sentinel group's own addresses, which go-redis dials without
// TLS.
func baseDialer(opts *redis.UniversalOptions) func(context.Context, string, string) (net.Conn, error) {
	if opts.Dialer != nil {
		return opts.Dialer
	}
	tlsDial := redis.NewDialer(&redis.Options{DialTimeout: opts.DialTimeout, TLSConfig: opts.TLSConfig})
	if opts.MasterName == "" || opts.TLSConfig == nil {
		return tlsDial
	}
	plain := redis.NewDialer(&redis.Options{DialTimeout: opts.DialTimeout})
	sentinels := slices.Clone(opts.Addrs)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if slices.Contains(sentinels, addr) {
			return plain(ctx, network, addr)
		}
		return tlsDial(ctx, network, addr)
	}
}

// failedConn is a dial that failed, reported on first use.
type failedConn struct {
	err  error
	addr net.Addr
}

func (c *failedConn) Read([]byte) (int, error)         { return 0, c.err }
func (c *failedConn) Write([]byte) (int, error)        { return 0, c.err }
func (c *failedConn) Close() error                     { return nil }
func (c *failedConn) LocalAddr() net.Addr              { return c.addr }
func (c *failedConn) RemoteAddr() net.Addr             { return c.addr }
func (c *failedConn) SetDeadline(time.Time) error      { return nil }
func (c *failedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *failedConn) SetWriteDeadline(time.Time) error { return nil }

// dialFailed is a dial's error as the failed connection's reads and
// writes return it: go-redis unwraps the error of a connection's
// handshake once, and the caller must still find the dial's own error
// (a *net.OpError of op "dial") in what it gets.
type dialFailed struct{ err error }

func (e dialFailed) Error() string { return e.err.Error() }
func (e dialFailed) Unwrap() error { return e.err }

// dialAddr is the address a failed dial was for.
type dialAddr struct{ network, addr string }

func (a dialAddr) Network() string { return a.network }
func (a dialAddr) String() string  { return a.addr }
