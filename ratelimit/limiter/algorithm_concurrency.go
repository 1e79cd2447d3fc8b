package limiter

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
)

// concurrency: at most events requests of a key in flight. Each admitted
// request holds a lease, an id with an expiry (µs, the store's clock)
// window after it was taken or last refreshed; the request gives it back
// when it ends (Leaser.Release), and an instance that dies without giving
// it back frees the slot when the lease expires. Stored in Redis as a
// sorted set (member: lease id, score: expiry; see decide.lua).

// leaseRetryUs is a refused concurrency Ask's RetryAfter: a slot comes
// back when a request ends, which no store can foresee; one second is a
// hint, not a promise.
const leaseRetryUs = secondUs

// leaseSet is one key's live leases: id -> expiry (µs).
type leaseSet map[string]int64

// trim drops the leases expired at now (an expiry at now has expired).
func (s leaseSet) trim(now int64) {
	for id, exp := range s {
		if exp <= now {
			delete(s, id)
		}
	}
}

// latest is the latest expiry of the leases, or now when there are none.
func (s leaseSet) latest(now int64) int64 {
	last := now
	for _, exp := range s {
		last = max(last, exp)
	}
	return last
}

// decide decides one Ask on the leases live at now (s trimmed): a cost 1
// Ask passes while fewer than events are held; a check (cost 0) while at
// least one slot is free.
func (s leaseSet) decide(p params) decision {
	count := int64(len(s))
	if count+p.need() <= p.events {
		return decision{allowed: true, remaining: p.events - count - p.cost}
	}
	return decision{remaining: max(p.events-count, 0), retryUs: leaseRetryUs}
}

// take records the lease of an allowed Ask.
func (s leaseSet) take(now int64, p params) {
	s[p.lease] = now + p.windowUs
}

// checkLease checks a concurrency Ask's cost and lease id.
func checkLease(p params) error {
	switch {
	case p.cost > 1:
		return fmt.Errorf("concurrency cost must be 0 or 1, got %d", p.cost)
	case p.cost == 1 && p.lease == "":
		return errors.New("concurrency ask without a lease id")
	}
	return checkLeaseID(p.lease)
}

// checkLeaseID bounds a lease id ("" passes: a check takes none).
func checkLeaseID(id string) error {
	if len(id) > MaxLeaseIDLen {
		return fmt.Errorf("lease id of %d bytes, past %d", len(id), MaxLeaseIDLen)
	}
	return nil
}

// leasePrefix makes this process's lease ids unique among instances: 8
// random bytes, drawn once.
var leasePrefix = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (Go 1.24)
	return hex.EncodeToString(b[:]) + "-"
}()

var leaseSeq atomic.Uint64

// NewLeaseID returns a lease id unique among every process sharing a
// store: this process's random prefix and a sequence number.
func NewLeaseID() string {
	return leasePrefix + strconv.FormatUint(leaseSeq.Add(1), 36)
}
