package shortener

import (
	"context"
	"crypto/sha256"
	"net/http"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

const (
	// idemHeader is the request header naming an idempotent request.
	idemHeader = "Idempotency-Key"
	// idemReplayedHeader marks a replayed answer.
	idemReplayedHeader = "Idempotent-Replayed"
	// maxIdemKey is the longest Idempotency-Key, in bytes.
	maxIdemKey = 255
)

// txStoreOf is the TxStore behind a handler's store, if it has one (the
// embedded store is shared across config reloads in a sharedStore).
func txStoreOf(s link.Store) (link.TxStore, bool) {
	if sh, ok := s.(sharedStore); ok {
		s = sh.Store
	}
	ts, ok := s.(link.TxStore)
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
func idemClaimOf(r *http.Request, key string, body []byte) *link.IdemClaim {
	if key == "" {
		return nil
	}
	return &link.IdemClaim{Scope: keyFingerprint(r), Key: key, BodySHA256: sha256.Sum256(body)}
}

// idemRefused answers a request refused before it reached the store (a
// 4xx from validation, not recorded): if its key holds a live record, that
// record decides (replay, or 422 for another body), so a retry of a
// request that once succeeded is not refused for a time that has passed.
func (h *Handler) idemRefused(ctx context.Context, w http.ResponseWriter, claim *link.IdemClaim, refusal error) error {
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
func writeAnswer(w http.ResponseWriter, ans link.IdemAnswer, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if replayed {
		w.Header().Set(idemReplayedHeader, "true")
	}
	w.WriteHeader(ans.Status)
	_, _ = w.Write(ans.Body)
}
