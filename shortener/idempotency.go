package shortener

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"time"
)

// Idempotency-Key (issue 15): a POST of the API that carries the header
// Idempotency-Key is recorded with its answer, in the same store
// transaction as the links it creates. The same key (from the same API key)
// with the same body within idemTTL gets the first answer again, with
// Idempotent-Replayed: true, and creates nothing; the same key with another
// body gets 422. A 5xx answer is never recorded: the transaction rolls back
// and the client may retry.

const (
	// idemHeader is the request header naming an idempotent request.
	idemHeader = "Idempotency-Key"
	// idemReplayedHeader marks a replayed answer.
	idemReplayedHeader = "Idempotent-Replayed"
	// maxIdemKey is the longest Idempotency-Key, in bytes.
	maxIdemKey = 255
	// idemTTL is how long a recorded answer is replayed; older records are
	// ignored, then pruned.
	idemTTL = 24 * time.Hour
	// idemPruneEvery and idemPruneBatch bound the pruning of expired
	// records: at most one batch per interval per store, run by a create
	// that carries a key.
	idemPruneEvery = time.Minute
	idemPruneBatch = 1000
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
	// is taken first: if a live one (younger than idemTTL at now) exists,
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

// txStoreOf is the TxStore behind a handler's store, if it has one (the
// embedded store is shared across config reloads in a sharedStore).
func txStoreOf(s Store) (TxStore, bool) {
	if sh, ok := s.(sharedStore); ok {
		s = sh.Store
	}
	ts, ok := s.(TxStore)
	return ts, ok
}

// idemKey reads the Idempotency-Key header: "" when absent; 1 to 255 bytes
// of printable ASCII, sent once, or a 400 naming the header.
func idemKey(r *http.Request) (string, error) {
	vals := r.Header.Values(idemHeader)
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", apiErr(http.StatusBadRequest, "%s: sent %d times, send it once", idemHeader, len(vals))
	}
	k := vals[0]
	if k == "" {
		return "", apiErr(http.StatusBadRequest, "%s: empty", idemHeader)
	}
	if len(k) > maxIdemKey {
		return "", apiErr(http.StatusBadRequest, "%s: %d bytes, at most %d are allowed", idemHeader, len(k), maxIdemKey)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return "", apiErr(http.StatusBadRequest, "%s: only printable ASCII is allowed", idemHeader)
		}
	}
	return k, nil
}

// idemClaimOf returns the claim of a request with the Idempotency-Key key
// and the raw body, nil without a key.
func idemClaimOf(r *http.Request, key string, body []byte) *IdemClaim {
	if key == "" {
		return nil
	}
	return &IdemClaim{Scope: keyFingerprint(r), Key: key, BodySHA256: sha256.Sum256(body)}
}

// idemRefused answers a request refused before it reached the store (a
// 4xx from validation, not recorded): if its key holds a live record, that
// record decides (replay, or 422 for another body), so a retry of a
// request that once succeeded is not refused for a time that has passed.
func (h *Handler) idemRefused(ctx context.Context, w http.ResponseWriter, claim *IdemClaim, refusal error) error {
	ts, ok := txStoreOf(h.store)
	if claim == nil || !ok {
		return refusal
	}
	digest, ans, found, err := ts.IdemLookup(ctx, claim.Scope, claim.Key, h.now())
	if err != nil || !found {
		return refusal
	}
	if digest != claim.BodySHA256 {
		return idemMismatch()
	}
	writeAnswer(w, ans, true)
	return nil
}

func idemMismatch() error {
	return apiErr(http.StatusUnprocessableEntity, "%s: already used with another request body", idemHeader)
}

// writeAnswer writes a rendered JSON answer, marked when replayed.
func writeAnswer(w http.ResponseWriter, ans IdemAnswer, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if replayed {
		w.Header().Set(idemReplayedHeader, "true")
	}
	w.WriteHeader(ans.Status)
	_, _ = w.Write(ans.Body)
}
