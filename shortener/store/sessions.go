package store

import (
	"errors"
	"time"
)

// Dashboard sessions, kept where every instance on the store sees them:
// signing in creates one, each request with its cookie reads it, signing
// out or an operator's revocation deletes it. The store holds no key that
// signs cookies: a copy of it (a backup, a replica, a read role) has the
// sessions' IDs but cannot make a cookie the module accepts.

// Session is a dashboard session as stored.
type Session struct {
	ID        [SessionIDLen]byte
	Key       string  // the API key's fingerprint: 16 hex digits, as the link history shows it
	Scope     uint8   // the module's scope of the key at sign-in
	Signer    [8]byte // the ID of the signing key that made its cookie at sign-in
	CreatedAt time.Time
	LastSeen  time.Time // when a request last used it (updated at most once a minute)
	ExpiresAt time.Time // CreatedAt + session_max_age: pruned after
}

// SessionIDLen is the size of a session ID: 128 random bits.
const SessionIDLen = 16

// ErrSessionNotFound: no session has this ID (never made, signed out,
// revoked or pruned).
var ErrSessionNotFound = errors.New("session not found")

// sessionPrune bounds the expired sessions one sign-in deletes.
const sessionPrune = 100
