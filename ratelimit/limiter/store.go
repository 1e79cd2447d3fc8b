package limiter

import (
	"context"
	"errors"
	"time"
)

// ErrInvalidAsk is the error of a store that refuses an Ask out of its
// bounds (see checkParams): the request's fault or the handler's, never a
// failure of the store, and nothing was decided or charged. The handler
// checks every quota and cost before it asks, so it never sees this.
var ErrInvalidAsk = errors.New("invalid rate limit ask")

// ErrOverloaded is the error of a decision this process could not send to
// the store in time: its local queue was full, or the decision waited in
// it too long. Load, not a failure of the store: nothing was sent and
// nothing charged.
var ErrOverloaded = errors.New("rate limit store queue overloaded")

// Algorithm names, as written in the Caddyfile and JSON.
const (
	TokenBucket   = "token_bucket"
	SlidingWindow = "sliding_window"
	FixedWindow   = "fixed_window"
	SlidingLog    = "sliding_log"
	LeakyBucket   = "leaky_bucket"
	// Concurrency: at most Events requests of a key in flight, each
	// holding a lease for Window (the lease TTL) unless refreshed (see
	// Leaser).
	Concurrency = "concurrency"
)

// Limit is the quota one zone applies to one key.
type Limit struct {
	Algorithm string        // one of the names above
	Events    int64         // quota per window (> 0)
	Window    time.Duration // (>= 1ms; stores work in whole milliseconds)
	// Burst: token_bucket capacity (0 = Events); leaky_bucket queue length
	// (requests that may wait their turn; 0 = none). Unused otherwise.
	Burst int64
	// Calendar: fixed_window only; the window is the calendar period
	// containing the store's clock (see Calendar.Period) instead of a
	// multiple of Window since the epoch. Window should then be the
	// unit's Nominal length (RateLimit-Policy, bans).
	Calendar Calendar
}

// bucketBurst reports whether Burst is a token bucket's capacity.
func (l Limit) BucketBurst() bool {
	return l.Burst > 0 && (l.Algorithm == TokenBucket || l.Algorithm == "")
}

// capacity is the most units one decision may take under l (a token
// bucket's burst, else events; the leaky bucket's queue aside).
func (l Limit) Capacity() int64 {
	if l.BucketBurst() {
		return l.Burst
	}
	return l.Events
}

// Ask is one zone's part of a decision.
type Ask struct {
	// Key is the full store key: "<prefix>:<zone>:<digest of the expanded key>"
	// (see StoreKey); on Redis Cluster it may carry a {hash tag}.
	Key   string
	Limit Limit
	// Cost in units; 0 checks without taking (allowed while at least one
	// unit is left; charges nothing). A cost larger than the capacity
	// (Events, token_bucket Burst, leaky_bucket Burst+1: see MaxCost) is
	// always refused, with RetryAfter = Window; up to 2^51 is accepted.
	// concurrency: 1 takes the lease Lease, 0 checks; no more.
	Cost int64
	// Ban: repeated refusals of this Ask's key set a ban (see Ban). Zero:
	// refusals never ban. Leave it zero for refusals that must not count
	// (dry_run zones, a cost past the quota).
	Ban Ban
	// Notify: the store tells which refusal of this Ask's key is the first
	// in its window (Result.First), across every instance sharing the store.
	// It costs the store a read and a write of the key's ban companion (see
	// BanKey) on a refusal, nothing when allowed; an Ask with a Ban gets
	// First anyway.
	Notify bool
	// Lease is the id of the lease a concurrency Ask of cost 1 takes (see
	// NewLeaseID): 1 to MaxLeaseIDLen bytes. Unused by the others.
	Lease string
	// Thresholds: fixed_window only; up to MaxThresholds unit counts,
	// rising strictly from 1, whose first crossing per key per period the
	// store tells (Result.Crossed): exactly once across every instance
	// sharing the store, a refund never making it tell a mark again.
	Thresholds []int64
	// Usage: fixed_window only; record the key's usage per period (see
	// usage.go). Zero: none.
	Usage Usage
}

// Result is the outcome of one Ask.
type Result struct {
	Allowed bool
	// Remaining units after this decision (never negative). For an Ask
	// that passed within a refused decision it is counted as if charged,
	// though nothing was.
	Remaining int64
	// RetryAfter: when refused, the wait until this Ask could succeed
	// (never shorter than the real wait). Zero when allowed.
	RetryAfter time.Duration
	// Reset: time until the quota is fully available again (token bucket:
	// full refill; windows: end of the current window; sliding log: oldest
	// entry leaves; leaky bucket: queue drained; concurrency: 0, a slot
	// comes back when a request ends).
	Reset time.Duration
	// Delay: leaky_bucket only; how long the handler must hold an allowed
	// request before passing it on (its turn in the queue).
	Delay time.Duration
	// Now is the store's clock at the decision (Redis TIME).
	Now time.Time

	// Left is Remaining before it is floored at 0: below 0 for a key in
	// debt (an approximate zone's units charged past the quota).
	Left int64

	// Banned: refused by a ban (Ask.Ban): one in force, or one this very
	// refusal set (BanSet). RetryAfter is then the ban's remainder.
	Banned bool
	BanSet bool
	// First: refused (not by a ban in force), and the first refusal of the
	// key in its window: since the window began at the key's first refusal,
	// or since its last ban was set. Reported for Asks with Notify or a Ban.
	First bool
	// Crossed: the Thresholds (bit i for Thresholds[i]) this Ask's charge
	// brought the key's count of its period to or past, first in the
	// period. Only a charge tells: an Ask allowed within a refused decision
	// charges nothing (though on Redis Cluster a slot that charged before
	// another refused tells its crossings: they are then never told again).
	Crossed uint8
}

// Store decides quotas. Implementations: the Redis store (one atomic Lua call
// per decision, Redis TIME) and the in-process memory store.
type Store interface {
	// Decide decides every Ask of one request atomically and all-or-nothing:
	// if any Ask is refused, no Ask is charged. Results are in Ask order.
	// The keys of one call must be distinct (one per zone). An error means
	// no decision: an Ask out of bounds (ErrInvalidAsk), or the store
	// unreachable or too slow.
	Decide(ctx context.Context, asks []Ask) ([]Result, error)
}

// Resetter is implemented by stores that can forget keys: the admin API's
// reset. A reset key reads as absent, so its next request finds the full
// quota.
type Resetter interface {
	// Reset deletes the state of keys (full store keys, see StoreKey).
	// Absent keys are not an error.
	Reset(ctx context.Context, keys ...string) error
}

// Lease is one concurrency lease a request holds.
type Lease struct {
	Key string        // the full store key of the zone's key
	ID  string        // the lease id (Ask.Lease)
	TTL time.Duration // the zone's lease TTL (its Limit.Window)
}

// Leaser is implemented by stores that hold concurrency leases.
type Leaser interface {
	// Refresh sets each lease still held to expire TTL from now (the
	// store's clock) and reports, per lease, whether it was still held (a
	// lease that expired or was released is not taken again).
	Refresh(ctx context.Context, leases []Lease) ([]bool, error)
	// Release gives the leases back; absent leases are not an error.
	Release(ctx context.Context, leases []Lease) error
}
