package shortener

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"time"
)

// Dashboard sessions. Signing in exchanges an API key for a cookie that
// every instance on the same link store accepts: the cookie carries the
// key's public fingerprint (the first 8 bytes of its SHA-256, what the
// link history shows), the scope, when it was issued and last used, and a
// random session ID, signed with HMAC-SHA-256 under a secret kept in the
// link store (ui_secret.go). A cookie is accepted while a configured key
// still has its fingerprint (removing a key ends its sessions; the scope
// is the key's as configured now), within ui_session_max_age of its
// issue and ui_session_idle of its last use. The key itself is neither
// kept nor sent back.

// Session cookie names: the __Host- prefix (Secure, Path=/, no Domain:
// no subdomain or plain-HTTP page can set or shadow it) over HTTPS.
const (
	sessionCookieTLS   = "__Host-shortener_session"
	sessionCookiePlain = "shortener_session"
)

// Defaults and bounds of the session lifetimes.
const (
	DefaultUISessionMaxAge = 12 * time.Hour
	DefaultUISessionIdle   = time.Hour
	minUISessionLifetime   = time.Minute
	maxUISessionMaxAge     = 30 * 24 * time.Hour
)

// sessionRefresh is how stale a cookie's last use gets before a request
// re-issues it (the idle limit counts from the last re-issue).
const sessionRefresh = time.Minute

// sessionClockSkew is how far in the future an issue time may lie (other
// instances' clocks).
const sessionClockSkew = 5 * time.Minute

// session is a verified dashboard session.
type session struct {
	scope  scope
	fp     [8]byte // the key's fingerprint: sha256(key)[:8]
	issued int64   // Unix seconds
	seen   int64   // Unix seconds of the cookie's last re-issue
	sid    [16]byte
}

const (
	sessionVersion    = 1
	sessionPayloadLen = 2 + 8 + 8 + 8 + 16
	sessionMACLen     = sha256.Size
	// maxSessionCookie bounds a cookie value read: longer ones are refused
	// unread.
	maxSessionCookie = 128
)

var sessionMACDomain = []byte("shortener session v1\x00")

func (s *session) payload() []byte {
	b := make([]byte, 0, sessionPayloadLen+sessionMACLen)
	b = append(b, sessionVersion, byte(s.scope))
	b = append(b, s.fp[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(s.issued))
	b = binary.BigEndian.AppendUint64(b, uint64(s.seen))
	return append(b, s.sid[:]...)
}

func sessionMAC(secret, payload []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(sessionMACDomain)
	m.Write(payload)
	return m.Sum(nil)
}

// encode is the cookie value of s: its payload and MAC, base64url.
func (s *session) encode(secret []byte) string {
	p := s.payload()
	return base64.RawURLEncoding.EncodeToString(append(p, sessionMAC(secret, p)...))
}

// decodeSession verifies a cookie value's MAC and reads it; lifetimes and
// the key are judged by the caller (sessions.verify).
func decodeSession(secret []byte, v string) (*session, bool) {
	if len(v) > maxSessionCookie {
		return nil, false
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) != sessionPayloadLen+sessionMACLen {
		return nil, false
	}
	p, mac := b[:sessionPayloadLen], b[sessionPayloadLen:]
	if !hmac.Equal(mac, sessionMAC(secret, p)) || p[0] != sessionVersion {
		return nil, false
	}
	s := &session{scope: scope(p[1])}
	copy(s.fp[:], p[2:10])
	s.issued = int64(binary.BigEndian.Uint64(p[10:18]))
	s.seen = int64(binary.BigEndian.Uint64(p[18:26]))
	copy(s.sid[:], p[26:42])
	return s, true
}

// csrfToken is the session's CSRF token: a MAC of its ID, so every
// instance derives the same and nothing is stored.
func csrfToken(secret []byte, sid [16]byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("shortener csrf v1\x00"))
	m.Write(sid[:])
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// fingerprint is the session key's fingerprint as the history shows it.
func (s *session) fingerprint() string { return hex.EncodeToString(s.fp[:]) }

// newSession starts a session for a key of scope sc with digest d.
func newSession(sc scope, d [32]byte, now time.Time) *session {
	s := &session{scope: sc, issued: now.Unix(), seen: now.Unix()}
	copy(s.fp[:], d[:8])
	_, _ = rand.Read(s.sid[:])
	return s
}

// current judges s at now against the lifetimes and the configured keys:
// the scope the session has now, scopeNone if it has ended.
func (u *uiConfig) current(s *session, keys []apiKey, now time.Time) scope {
	t := now.Unix()
	if s.issued > t+int64(sessionClockSkew/time.Second) || t-s.issued > int64(u.maxAge/time.Second) ||
		t-s.seen > int64(u.idle/time.Second) || s.scope != scopeRead && s.scope != scopeWrite {
		return scopeNone
	}
	got := 0
	for i := range keys {
		eq := subtle.ConstantTimeCompare(s.fp[:], keys[i].digest[:8])
		got |= subtle.ConstantTimeSelect(eq, int(keys[i].scope), 0)
	}
	return min(scope(got), s.scope)
}

// cookieName is the session cookie's name for r's scheme.
func cookieName(r *http.Request) string {
	if r.TLS != nil {
		return sessionCookieTLS
	}
	return sessionCookiePlain
}

// setSessionCookie writes s as r's session cookie; nil clears it.
func (u *uiConfig) setSessionCookie(w http.ResponseWriter, r *http.Request, secret []byte, s *session) {
	c := &http.Cookie{Name: cookieName(r), Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode}
	if s == nil {
		c.MaxAge = -1
	} else {
		c.Value = s.encode(secret)
		c.MaxAge = int(min(u.maxAge-time.Duration(s.seen-s.issued)*time.Second, u.idle) / time.Second)
	}
	http.SetCookie(w, c)
}

type sessionCtxKey struct{}

// sessionOf is the session a request was authenticated with, nil for a
// Bearer key.
func sessionOf(ctx context.Context) *session {
	s, _ := ctx.Value(sessionCtxKey{}).(*session)
	return s
}
