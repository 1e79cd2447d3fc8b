package shortener

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// Dashboard sessions. Signing in exchanges an API key for a session kept
// in the link store (store.Session: the key's public fingerprint, the
// first 8 bytes of its SHA-256 as the link history shows it; the scope;
// when it began and was last used) and a cookie that carries only the
// session's random ID, signed with HMAC-SHA-256 under a key the store
// never holds (ui_secret.go). A request verifies the signature first,
// then reads the session (one store read): signing out or an operator's
// revocation (ui_sessions_admin.go) deletes it, so a copied cookie stops
// working everywhere at once. A session is accepted while a configured key
// still has its fingerprint (removing a key ends its sessions; the scope
// is the key's as configured now), within ui_session_max_age of its start
// and ui_session_idle of its last use. The key itself is neither kept nor
// sent back.

// Session cookie names: the __Secure- prefix over HTTPS (only a secure
// page can set it). The cookie is set twice, with the dashboard's path and
// with the API's, so no other path of the site receives it.
const (
	sessionCookieTLS   = "__Secure-shortener_session"
	sessionCookiePlain = "shortener_session"
)

// Defaults and bounds of the session lifetimes.
const (
	DefaultUISessionMaxAge = 12 * time.Hour
	DefaultUISessionIdle   = time.Hour
	minUISessionLifetime   = time.Minute
	maxUISessionMaxAge     = 30 * 24 * time.Hour
)

// sessionRefresh is how stale a session's last use gets before a request
// records a new one and re-issues the cookie.
const sessionRefresh = time.Minute

// sessionClockSkew is how far in the future a session's start may lie
// (other instances' clocks).
const sessionClockSkew = 5 * time.Minute

// sessionTimeout bounds the store calls of one request's session.
const sessionTimeout = 2 * time.Second

// session is a dashboard session read from the store.
type session struct {
	sid     [store.SessionIDLen]byte
	scope   scope
	fp      [8]byte // the key's fingerprint: sha256(key)[:8]
	created time.Time
	seen    time.Time
	signer  [8]byte
}

// sessionStore keeps the sessions: both real stores.
type sessionStore interface {
	CreateSession(ctx context.Context, s store.Session) error
	GetSession(ctx context.Context, id [store.SessionIDLen]byte) (store.Session, error)
	TouchSession(ctx context.Context, id [store.SessionIDLen]byte, seen time.Time) error
	DeleteSession(ctx context.Context, id [store.SessionIDLen]byte) (bool, error)
	DeleteKeySessions(ctx context.Context, key string) (int, error)
	ListSessions(ctx context.Context, key string, now time.Time, limit int) ([]store.Session, error)
}

// The cookie value: version, session ID and MAC, base64url.
const (
	sessionVersion    = 2
	sessionPayloadLen = 1 + store.SessionIDLen
	sessionMACLen     = sha256.Size
	// maxSessionCookie bounds a cookie value read: longer ones are refused
	// unread.
	maxSessionCookie = 128
	// maxSessionCookies bounds the cookies of that name a request's
	// values are tried from (another path's, or one a sibling subdomain
	// set, may come first).
	maxSessionCookies = 4
)

var sessionMACDomain = []byte("shortener session v2\x00")

func sessionMAC(k *signingKey, payload []byte) []byte {
	m := hmac.New(sha256.New, k.cookie[:])
	m.Write(sessionMACDomain)
	m.Write(payload)
	return m.Sum(nil)
}

// encodeCookie is the cookie value of session id under k.
func encodeCookie(k *signingKey, id [store.SessionIDLen]byte) string {
	p := append([]byte{sessionVersion}, id[:]...)
	return base64.RawURLEncoding.EncodeToString(append(p, sessionMAC(k, p)...))
}

// decodeCookie verifies a cookie value under each key and returns its
// session ID and the index of the key (0: the current one) that signed it.
func decodeCookie(keys []*signingKey, v string) (id [store.SessionIDLen]byte, key int, ok bool) {
	if len(v) > maxSessionCookie {
		return id, 0, false
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) != sessionPayloadLen+sessionMACLen || b[0] != sessionVersion {
		return id, 0, false
	}
	p, mac := b[:sessionPayloadLen], b[sessionPayloadLen:]
	for i, k := range keys {
		if hmac.Equal(mac, sessionMAC(k, p)) {
			copy(id[:], p[1:])
			return id, i, true
		}
	}
	return id, 0, false
}

// csrfToken is the session's CSRF token: a MAC of its ID under the CSRF
// key of the key that signed its first cookie (csrfKey), so every
// instance derives the same, a rotation keeps it, and nothing is stored.
func csrfToken(csrfKey []byte, sid [store.SessionIDLen]byte) string {
	m := hmac.New(sha256.New, csrfKey)
	m.Write([]byte("shortener csrf v2\x00"))
	m.Write(sid[:])
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfKey is the CSRF key of s: its signer's when still configured.
func (u *uiConfig) csrfKey(s *session) []byte {
	for _, k := range u.keys.all() {
		if k.id == s.signer {
			return k.csrf[:]
		}
	}
	return u.keys.current.csrf[:]
}

// fingerprint is the session key's fingerprint as the history shows it.
func (s *session) fingerprint() string { return hex.EncodeToString(s.fp[:]) }

// newSession starts a session for a key of scope sc with digest d.
func (u *uiConfig) newSession(sc scope, d [32]byte, now time.Time) *session {
	now = time.Unix(now.Unix(), 0) // whole seconds, as every store keeps them
	s := &session{scope: sc, created: now, seen: now, signer: u.keys.current.id}
	copy(s.fp[:], d[:8])
	_, _ = rand.Read(s.sid[:])
	return s
}

// record is s as stored.
func (u *uiConfig) record(s *session) store.Session {
	return store.Session{ID: s.sid, Key: s.fingerprint(), Scope: uint8(s.scope), Signer: s.signer,
		CreatedAt: s.created, LastSeen: s.seen, ExpiresAt: s.created.Add(u.maxAge)}
}

// sessionOfRecord is the session of a stored record; false if the record
// is not one this module wrote.
func sessionOfRecord(rec store.Session) (*session, bool) {
	s := &session{sid: rec.ID, scope: scope(rec.Scope), created: rec.CreatedAt, seen: rec.LastSeen, signer: rec.Signer}
	n, err := hex.Decode(s.fp[:], []byte(rec.Key))
	return s, err == nil && n == len(s.fp)
}

// current judges s at now against the lifetimes and the configured keys:
// the scope the session has now, scopeNone if it has ended.
func (u *uiConfig) current(s *session, keys []apiKey, now time.Time) scope {
	if !u.alive(s, now) {
		return scopeNone
	}
	got := 0
	for i := range keys {
		eq := subtle.ConstantTimeCompare(s.fp[:], keys[i].digest[:8])
		got |= subtle.ConstantTimeSelect(eq, int(keys[i].scope), 0)
	}
	return min(scope(got), s.scope)
}

// alive reports whether s is within its lifetimes at now and of a scope
// this module gives.
func (u *uiConfig) alive(s *session, now time.Time) bool {
	return !s.created.After(now.Add(sessionClockSkew)) && now.Sub(s.created) <= u.maxAge &&
		now.Sub(s.seen) <= u.idle && (s.scope == scopeRead || s.scope == scopeWrite)
}

// ends is when s ends unless used again.
func (u *uiConfig) ends(s *session) time.Time {
	if end := s.seen.Add(u.idle); end.Before(s.created.Add(u.maxAge)) {
		return end
	}
	return s.created.Add(u.maxAge)
}

// cookieName is the session cookie's name for r's scheme.
func cookieName(r *http.Request) string {
	if r.TLS != nil {
		return sessionCookieTLS
	}
	return sessionCookiePlain
}

// cookieID is the session ID of r's first cookie that verifies, and the
// index of the key that signed it.
func (u *uiConfig) cookieID(r *http.Request) (id [store.SessionIDLen]byte, key int, ok bool) {
	name, tried := cookieName(r), 0
	for _, c := range r.Cookies() {
		if c.Name != name || c.Value == "" {
			continue
		}
		if id, key, ok = decodeCookie(u.keys.all(), c.Value); ok || tried == maxSessionCookies-1 {
			return id, key, ok
		}
		tried++
	}
	return id, 0, false
}

// setSessionCookie writes s as r's session cookie, on the dashboard's path
// and the API's, signed with the current key; nil clears both.
func (u *uiConfig) setSessionCookie(w http.ResponseWriter, r *http.Request, s *session) {
	for _, path := range []string{u.path, u.api} {
		c := &http.Cookie{Name: cookieName(r), Path: path, HttpOnly: true, Secure: r.TLS != nil,
			SameSite: http.SameSiteStrictMode}
		if s == nil {
			c.MaxAge = -1
		} else {
			c.Value = encodeCookie(&u.keys.current, s.sid)
			c.MaxAge = int(max(min(u.maxAge-s.seen.Sub(s.created), u.idle), time.Second) / time.Second)
		}
		http.SetCookie(w, c)
	}
}

type sessionCtxKey struct{}

// sessionOf is the session a request was authenticated with, nil for a
// Bearer key.
func sessionOf(ctx context.Context) *session {
	s, _ := ctx.Value(sessionCtxKey{}).(*session)
	return s
}
