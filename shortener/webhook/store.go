package webhook

import (
	"context"
	"errors"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Errors of a Store.
var (
	ErrNotFound  = errors.New("webhook endpoint not found")
	ErrTooMany   = errors.New("too many webhook endpoints")
	ErrLeaseLost = errors.New("the endpoint's lease is held by another instance")
	ErrNoMessage = errors.New("webhook message not found")
)

// Store keeps endpoints, their messages and attempts, beside a link
// store's outbox (link.EventLog): PostgreSQL for any number of instances,
// the embedded file for one. Both stores implement it.
//
// Delivery is leased per endpoint: one instance at a time makes an
// endpoint's messages from the outbox and sends them; every write of a
// dispatcher names its owner and is refused (ErrLeaseLost) once another
// instance has taken the lease, so two instances never send one
// endpoint's messages at the same moment, and a crashed instance's
// endpoints are taken over when its leases end.
type Store interface {
	// CreateEndpoint stores a new endpoint (its ID, Version 1 and times
	// set by the caller); ErrTooMany past MaxEndpoints. Its outbox cursor
	// starts at the log's end: it gets the events recorded from now on.
	CreateEndpoint(ctx context.Context, e Endpoint, from link.EventCursor) error
	// Endpoint returns one endpoint, or ErrNotFound.
	Endpoint(ctx context.Context, id string) (Endpoint, error)
	// Endpoints returns every endpoint, by creation time.
	Endpoints(ctx context.Context) ([]Endpoint, error)
	// UpdateEndpoint applies fn to the endpoint in one transaction, raises
	// its Version and sets UpdatedAt to now; ErrNotFound if absent. fn's
	// error aborts the change and is returned.
	UpdateEndpoint(ctx context.Context, id string, now time.Time, fn func(*Endpoint) error) (Endpoint, error)
	// DeleteEndpoint removes the endpoint, its messages and attempts.
	DeleteEndpoint(ctx context.Context, id string) error

	// Lease gives owner the endpoint's lease for d from now, when it is
	// free (never taken, or ended) or owner's already, and returns the
	// endpoint and its outbox cursor; ok false when another owner holds
	// it. The store's clock judges leases (PostgreSQL's, so instances'
	// clocks need not agree).
	Lease(ctx context.Context, id, owner string, d time.Duration) (e Endpoint, cursor link.EventCursor, ok bool, err error)
	// Release ends owner's lease of the endpoint now, so that another
	// instance takes it without waiting for it to run out (an instance
	// stopping, a config reload); nothing when another owner holds it.
	Release(ctx context.Context, id, owner string) error
	// Enqueue stores msgs (pending, due at their NextAt) and moves the
	// endpoint's cursor to cursor, together, if owner still holds the
	// lease; else ErrLeaseLost and nothing changes.
	Enqueue(ctx context.Context, id, owner string, msgs []Message, cursor link.EventCursor) error
	// Due returns up to limit pending messages of the endpoint whose
	// NextAt is not after now, earliest first. Their bodies are the
	// dispatcher's: it gives them to the pool BodyBuffer takes from once
	// sent.
	Due(ctx context.Context, id string, now time.Time, limit int) ([]Message, error)
	// Settle records attempts and their messages' new states together, if
	// owner still holds the lease; else ErrLeaseLost and nothing changes.
	// disable, when not "", disables the endpoint with that reason (a 410
	// Gone).
	Settle(ctx context.Context, id, owner string, results []Result, disable string) error

	// Messages lists an endpoint's messages, newest first, before the
	// message ID before ("" for the newest), at most limit; state ""
	// for any.
	Messages(ctx context.Context, id string, state State, before string, limit int) ([]Message, error)
	// Attempts lists a message's attempts, first first.
	Attempts(ctx context.Context, id, msgID string) ([]AttemptLog, error)
	// Replay makes messages pending again, due at now, with a new series
	// of attempts (Series = Attempts), keeping their IDs and bodies: the one with ID msgID, or (msgID "") every message of
	// the endpoint made at or after since. It returns how many.
	Replay(ctx context.Context, id, msgID string, since, now time.Time) (int, error)
	// Prune deletes messages (and their attempts) made before cutoff that
	// are no longer pending, and outbox events recorded before cutoff.
	Prune(ctx context.Context, cutoff time.Time) error
	// Backlog reports what waits: for the metrics.
	Backlog(ctx context.Context) (Backlog, error)
}

// Backlog is what waits in a store, for the metrics.
type Backlog struct {
	Pending       int64     // messages pending, every endpoint
	OldestPending time.Time // when the oldest pending message was made; zero for none
	Events        int64     // outbox events kept (PostgreSQL: the planner's estimate)
	OldestEvent   time.Time // when the oldest kept event was recorded; zero for none
}

// Result is one attempt of a message and what it did to the message.
type Result struct {
	Attempt AttemptLog
	State   State     // the message's state after it
	NextAt  time.Time // a pending message's next attempt
}
