package shortener

import (
	"net/netip"
	"time"

	"github.com/maypok86/otter/v2"
	"golang.org/x/time/rate"
)

// Sign-in attempts are limited per client address (Caddy's client IP, so
// trusted_proxies applies; an IPv6 client by its /64) and in all, so a key
// cannot be guessed through the dashboard faster than through the API's
// own 401s, and many addresses together get no further.
const (
	signinPerClient      = 10               // attempts a client may make at once
	signinClientInterval = 6 * time.Second  // then one per this interval
	signinAllPerSecond   = 50               // attempts per second from all clients
	signinClients        = 10000            // clients whose attempts are remembered
	signinRetryAfter     = 6 * time.Second  // Retry-After of a refused attempt
	signinIdle           = 10 * time.Minute // a client's limiter is forgotten after
)

// signinLimiter limits sign-in attempts of one handler.
type signinLimiter struct {
	all     *rate.Limiter
	clients *otter.Cache[netip.Prefix, *rate.Limiter]
}

func newSigninLimiter() *signinLimiter {
	return &signinLimiter{
		all: rate.NewLimiter(signinAllPerSecond, signinAllPerSecond),
		clients: otter.Must(&otter.Options[netip.Prefix, *rate.Limiter]{
			MaximumSize:      signinClients,
			ExpiryCalculator: otter.ExpiryAccessing[netip.Prefix, *rate.Limiter](signinIdle),
		}),
	}
}

// allow reports whether the client at addr may try to sign in now.
func (l *signinLimiter) allow(addr netip.Addr) bool {
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits) // the zero Addr: the zero Prefix, one shared bucket
	lim, _ := l.clients.Compute(p, func(old *rate.Limiter, found bool) (*rate.Limiter, otter.ComputeOp) {
		if found {
			return old, otter.CancelOp
		}
		return rate.NewLimiter(rate.Every(signinClientInterval), signinPerClient), otter.WriteOp
	})
	return lim.Allow() && l.all.Allow()
}
