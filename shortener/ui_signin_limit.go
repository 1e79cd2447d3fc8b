package shortener

import (
	"net/netip"
	"time"

	"github.com/maypok86/otter/v2"
	"golang.org/x/time/rate"
)

// Sign-in attempts are limited per client address (Caddy's client IP, so
// trusted_proxies applies; an IPv6 client by its /64), charged first on
// every attempt; wrong keys are also counted across all clients. A
// correct key from a client within its own limit always signs in: the
// failures of other clients never lock it out. When wrong keys from all
// clients together go over their rate, each further wrong key also spends
// the rest of its client's burst, so many addresses together guess no
// faster than one each per signinClientInterval.
const (
	signinPerClient      = 10               // attempts a client may make at once
	signinClientInterval = 6 * time.Second  // then one per this interval
	signinFailsPerSecond = 50               // wrong keys per second from all clients before bursts are spent
	signinClients        = 10000            // clients whose attempts are remembered
	signinRetryAfter     = 6 * time.Second  // Retry-After of a refused attempt
	signinIdle           = 10 * time.Minute // a client's limiter is forgotten after
)

// signinLimiter limits sign-in attempts of one handler.
type signinLimiter struct {
	failures *rate.Limiter
	clients  *otter.Cache[netip.Prefix, *rate.Limiter]
}

func newSigninLimiter() *signinLimiter {
	return &signinLimiter{
		failures: rate.NewLimiter(signinFailsPerSecond, signinFailsPerSecond),
		clients: otter.Must(&otter.Options[netip.Prefix, *rate.Limiter]{
			MaximumSize:      signinClients,
			ExpiryCalculator: otter.ExpiryAccessing[netip.Prefix, *rate.Limiter](signinIdle),
		}),
	}
}

// client charges one attempt to the client at addr: its limiter, and
// whether it may try now.
func (l *signinLimiter) client(addr netip.Addr) (*rate.Limiter, bool) {
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
	return lim, lim.Allow()
}

// failed counts a wrong key of the client whose limiter is lim: over the
// rate of all clients' failures, the client's burst is spent too.
func (l *signinLimiter) failed(lim *rate.Limiter) {
	if !l.failures.Allow() {
		now := time.Now()
		lim.AllowN(now, int(lim.TokensAt(now)))
	}
}
