package shortener

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// scope is what an API key may do.
type scope uint8

const (
	scopeNone  scope = iota // no key, or a wrong one: 401
	scopeRead               // api_read_key: read endpoints only
	scopeWrite              // api_key: everything
)

// methodScope is the one place that decides which scope a request needs:
// reading is GET and HEAD, on any endpoint (link, stats, and every read
// endpoint added later); every other method changes something, or may, and
// needs an api_key. A method missing here needs scopeWrite, so a new write
// endpoint is closed to read keys without being listed.
var methodScope = map[string]scope{
	http.MethodGet:  scopeRead,
	http.MethodHead: scopeRead,
}

// needs is the scope a request needs.
func needs(r *http.Request) scope {
	if s, ok := methodScope[r.Method]; ok {
		return s
	}
	return scopeWrite
}

func keyDigest(k string) [32]byte { return sha256.Sum256([]byte(k)) }

// bearerKey is the key of the request's Authorization header, "" if none.
func bearerKey(r *http.Request) string {
	kind, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(kind, "Bearer") {
		return ""
	}
	return strings.TrimSpace(key)
}

// keyFingerprint names the API key of a request in the link history: the
// first 8 bytes of the key's SHA-256 as 16 hex digits, never the key
// itself. An operator finds the key of a fingerprint with
// `printf %s "$KEY" | sha256sum | cut -c1-16`.
//
// A request of a dashboard session names the session's key.
func keyFingerprint(r *http.Request) string {
	if s := sessionOf(r.Context()); s != nil {
		return s.fingerprint()
	}
	d := keyDigest(bearerKey(r))
	return hex.EncodeToString(d[:8])
}

// MinAPIKeyLen is the shortest API key (api_key or api_read_key) that
// loads: a key is a password, and a short one falls to guessing.
const MinAPIKeyLen = 16

// checkAPIKey judges one API key, as configured or after expanding its
// placeholders.
func checkAPIKey(k string) error {
	if k == "" {
		return errors.New("is empty")
	}
	if len(k) < MinAPIKeyLen {
		return fmt.Errorf("is %d bytes long; at least %d are required", len(k), MinAPIKeyLen)
	}
	return nil
}

// apiKey is a configured key by its digest, with its scope.
type apiKey struct {
	digest [32]byte
	scope  scope
}

// provisionKeys expands the placeholders of api_keys and api_read_keys,
// judges each key again and refuses a key given with both scopes. Error
// texts name keys by position only, never by value.
func (h *Handler) provisionKeys(repl *caddy.Replacer) error {
	h.apiKeys = h.apiKeys[:0]
	for _, set := range []struct {
		name  string
		keys  []string
		scope scope
	}{{"api_key", h.APIKeys, scopeWrite}, {"api_read_key", h.APIReadKeys, scopeRead}} {
		for i, k := range set.keys {
			k = repl.ReplaceKnown(k, "")
			if err := checkAPIKey(k); err != nil {
				return fmt.Errorf("shortener: %s #%d %v after expanding placeholders", set.name, i+1, err)
			}
			d := keyDigest(k)
			for _, other := range h.apiKeys {
				if other.digest == d && other.scope != set.scope {
					return fmt.Errorf("shortener: %s #%d is also an api_key after expanding placeholders; a key has one scope", set.name, i+1)
				}
			}
			h.apiKeys = append(h.apiKeys, apiKey{d, set.scope})
		}
	}
	return nil
}

// keyScope is the scope of the request's bearer key.
func (h *Handler) keyScope(r *http.Request) scope {
	key := bearerKey(r)
	if key == "" {
		return scopeNone
	}
	return h.scopeOfDigest(keyDigest(key))
}

// scopeOfDigest compares a key's digest with every configured key in
// constant time (over digests, so the key length leaks nothing either) and
// returns the scope of the one it matches.
func (h *Handler) scopeOfDigest(d [32]byte) scope {
	got := 0
	for i := range h.apiKeys {
		eq := subtle.ConstantTimeCompare(d[:], h.apiKeys[i].digest[:])
		got |= subtle.ConstantTimeSelect(eq, int(h.apiKeys[i].scope), 0)
	}
	return scope(got)
}

// authorize answers 401 to a request without a valid key or dashboard
// session and 403 to one whose key lacks the scope its method needs
// (RFC 6750's insufficient_scope), or that writes with a session cookie
// from another origin or without its CSRF token. A request of a session
// comes back with the session in its context. A Bearer key, when given,
// is the only credential judged.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request) (*http.Request, error) {
	have := h.keyScope(r)
	if have == scopeNone && bearerKey(r) == "" {
		s, secret, err := h.cookieSession(w, r)
		if err != nil {
			return r, err
		}
		if s != nil {
			if needs(r) == scopeWrite && s.scope == scopeWrite {
				if err := checkCSRF(r, csrfToken(secret, s.sid)); err != nil {
					return r, err
				}
			}
			have, r = s.scope, r.WithContext(context.WithValue(r.Context(), sessionCtxKey{}, s))
		}
	}
	if have == scopeNone {
		return r, apiErr(http.StatusUnauthorized, "missing or invalid API key")
	}
	if have < needs(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="shortener", error="insufficient_scope"`)
		return r, apiErr(http.StatusForbidden, "this API key is read-only: %s needs an api_key", r.Method)
	}
	return r, nil
}
