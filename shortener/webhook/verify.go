package webhook

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a message's webhook-timestamp may be from the
// verifier's clock, either way, as the Standard Webhooks libraries have it.
const Tolerance = 5 * time.Minute

// Errors of Verify, told apart with errors.Is.
var (
	ErrMissingHeader = errors.New("webhook: a webhook-id, webhook-timestamp or webhook-signature header is missing")
	ErrTimestamp     = errors.New("webhook: the webhook-timestamp is not a Unix time within 5 minutes of now")
	ErrSignature     = errors.New("webhook: no signature matches")
)

// Verify is the receiver's side of the Standard Webhooks symmetric
// scheme, used by this module's tests and the dashboard's test button: it
// accepts the message when the webhook-timestamp is a Unix time (decimal
// digits, no sign or leading zero) within Tolerance of now and one of the
// space-separated signatures of webhook-signature is the v1 signature of
// "{webhook-id}.{webhook-timestamp}.{body}" under one of the secrets.
// Signatures are compared in constant time; other versions (v1a) are
// skipped.
func Verify(h http.Header, body []byte, now time.Time, secrets ...Secret) error {
	id, ts, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return ErrMissingHeader
	}
	if !timely(ts, now) {
		return ErrTimestamp
	}
	for _, s := range secrets {
		if s.IsZero() {
			continue
		}
		want := []byte(sign(s, id, ts, body))
		for _, got := range strings.Split(sigs, " ") {
			if subtle.ConstantTimeCompare([]byte(got), want) == 1 {
				return nil
			}
		}
	}
	return ErrSignature
}

// timely reports a canonical decimal Unix time within Tolerance of now.
func timely(ts string, now time.Time) bool {
	if ts[0] < '1' || ts[0] > '9' {
		return false
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	tol := int64(Tolerance / time.Second)
	d := now.Unix() - sec
	return d <= tol && d >= -tol
}
