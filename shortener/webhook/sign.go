package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers. They are sent in lower case as the
// specification writes them; http.Header's canonical keys are equal for
// any receiver, since header names are case-insensitive.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// signatureVersion prefixes a symmetric (HMAC-SHA256) signature.
const signatureVersion = "v1,"

// maxIDLen bounds the length of a message id Headers signs.
const maxIDLen = 255

// ErrMessageID is returned by Headers for an id it will not sign.
var ErrMessageID = errors.New("webhook: invalid message id")

// ErrNoSecret is returned by Headers when given no secret.
var ErrNoSecret = errors.New("webhook: no signing secret")

// Sign returns the Standard Webhooks symmetric signature of a message:
// "v1," and the standard base64 of HMAC-SHA256, keyed by the secret, of
// "{id}.{timestamp}.{body}", the timestamp in Unix seconds.
func Sign(s Secret, id string, ts time.Time, body []byte) string {
	return sign(s, id, strconv.FormatInt(ts.Unix(), 10), body)
}

// sign signs with the timestamp as it is written in the header.
func sign(s Secret, id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return signatureVersion + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Headers returns the headers of one delivery attempt of a JSON message:
// webhook-id, webhook-timestamp (ts in Unix seconds: the attempt's time,
// not the event's), webhook-signature with one signature per secret,
// space-separated (during a rotation the new and the old secret both
// sign, so receivers holding either accept it), and Content-Type
// application/json. The id must be 1 to 255 of the characters
// [A-Za-z0-9_-] (NewID's are); at least one secret is needed.
func Headers(id string, ts time.Time, body []byte, secrets ...Secret) (http.Header, error) {
	if !signableID(id) {
		return nil, ErrMessageID
	}
	if len(secrets) == 0 {
		return nil, ErrNoSecret
	}
	unix := strconv.FormatInt(ts.Unix(), 10)
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if s.IsZero() {
			return nil, ErrNoSecret
		}
		sigs = append(sigs, sign(s, id, unix, body))
	}
	return http.Header{
		http.CanonicalHeaderKey(HeaderID):        {id},
		http.CanonicalHeaderKey(HeaderTimestamp): {unix},
		http.CanonicalHeaderKey(HeaderSignature): {strings.Join(sigs, " ")},
		"Content-Type":                           {"application/json"},
	}, nil
}

// signableID reports an id that is safe in a header and holds no '.'
// (which would let an id and a timestamp be shifted in the signed content).
func signableID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}
