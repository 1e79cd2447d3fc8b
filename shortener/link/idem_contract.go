package link

import (
	"context"
	"errors"
	"time"
)

// Idempotency-Key (issue 15): a POST of the API that carries the header
// Idempotency-Key is recorded with its answer, in the same store
// transaction as the links it creates. The same key (from the same API key)
// with the same body within IdemTTL gets the first answer again, with
// Idempotent-Replayed: true, and creates nothing; the same key with another
// body gets 422. A 5xx answer is never recorded: the transaction rolls back
// and the client may retry.

const (
	// IdemTTL is how long a recorded answer is replayed; older records are
	// ignored, then pruned.
	IdemTTL = 24 * time.Hour
	// IdemPruneEvery and IdemPruneBatch bound the pruning of expired
	// records: at most one batch per interval per store, run by a create
	// that carries a key.
	IdemPruneEvery = time.Minute
	IdemPruneBatch = 1000
)

// ErrIdemMismatch: the Idempotency-Key was recorded with another body.
var ErrIdemMismatch = errors.New("idempotency key used with another body")

// IdemClaim names one request with an Idempotency-Key.
type IdemClaim struct {
	Scope      string   // fingerprint of the API key that sent it
	Key        string   // the header's value
	BodySHA256 [32]byte // digest of the raw request body
}

// IdemAnswer is an answer as recorded and replayed.
type IdemAnswer struct {
	Status int
	Body   []byte
}

// LinkTx is one create transaction of a TxStore.
type LinkTx interface {
	// Insert stores each link whose code is free, in one round trip, and
	// reports in order which were stored; a taken code (also one taken by
	// an earlier link of the same call) changes nothing and reports false.
	Insert(ctx context.Context, links []Link) ([]bool, error)
	// Reusable returns, for each link, an active (at now), non-custom
	// stored link that reuse may answer instead (sameReuse), or a zero Link.
	// It first locks the links' long URLs until the transaction ends, so a
	// concurrent transaction looking for the same URL waits and then sees
	// what this one created.
	Reusable(ctx context.Context, links []Link, now time.Time) ([]Link, error)
}

// TxStore runs creates in one transaction with their idempotency record.
// Both stores implement it.
type TxStore interface {
	// CreateTx runs fn in one transaction. With a claim, the claim's record
	// is taken first: if a live one (younger than IdemTTL at now) exists,
	// fn does not run and CreateTx returns its answer with replayed true,
	// or ErrIdemMismatch when its digest differs; a concurrent transaction
	// holding the same key is waited for. fn's answer is recorded with its
	// links in one commit; an error or a status of 500 or above rolls
	// everything back and records nothing.
	CreateTx(ctx context.Context, claim *IdemClaim, now time.Time,
		fn func(context.Context, LinkTx) (IdemAnswer, error)) (ans IdemAnswer, replayed bool, err error)
	// IdemLookup returns the live record of scope and key at now, if any,
	// without taking it.
	IdemLookup(ctx context.Context, scope, key string, now time.Time) (digest [32]byte, ans IdemAnswer, found bool, err error)
}
