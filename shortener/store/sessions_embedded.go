package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// The dashboard sessions in the embedded file.
var (
	// EmbeddedSessions: session ID → embeddedSession (JSON).
	EmbeddedSessions = []byte("ui_sessions")
	// embeddedSessionExpiry orders sessions for pruning: expires (8 bytes,
	// Unix microseconds, big-endian) + session ID → empty.
	embeddedSessionExpiry = []byte("ui_session_expiry")
	// embeddedOldSecret is the meta key where the session signing secret
	// was kept: deleted at open.
	embeddedOldSecret = []byte("secret:ui_session")
)

// embeddedSession is a session as stored; times in Unix microseconds.
type embeddedSession struct {
	Key       string `json:"k"`
	Scope     uint8  `json:"s"`
	Signer    []byte `json:"g"`
	CreatedAt int64  `json:"c"`
	LastSeen  int64  `json:"l"`
	ExpiresAt int64  `json:"e"`
}

// initSessions makes the session buckets and deletes the signing secret
// older versions kept in the file.
func initSessions(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(EmbeddedSessions); err != nil {
		return err
	}
	if _, err := tx.CreateBucketIfNotExists(embeddedSessionExpiry); err != nil {
		return err
	}
	return tx.Bucket(embeddedMeta).Delete(embeddedOldSecret)
}

func sessionExpiryKey(expires int64, id []byte) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(expires)), id...)
}

func (r embeddedSession) session(id []byte) (Session, error) {
	s := Session{Key: r.Key, Scope: r.Scope, CreatedAt: link.FromMicros(r.CreatedAt),
		LastSeen: link.FromMicros(r.LastSeen), ExpiresAt: link.FromMicros(r.ExpiresAt)}
	if len(id) != SessionIDLen || len(r.Signer) != len(s.Signer) {
		return Session{}, fmt.Errorf("session record with a %d-byte id and a %d-byte signer", len(id), len(r.Signer))
	}
	copy(s.ID[:], id)
	copy(s.Signer[:], r.Signer)
	return s, nil
}

func readSession(b *bolt.Bucket, id []byte) (embeddedSession, bool, error) {
	v := b.Get(id)
	if v == nil {
		return embeddedSession{}, false, nil
	}
	var r embeddedSession
	if err := json.Unmarshal(v, &r); err != nil {
		return embeddedSession{}, false, fmt.Errorf("session record: %w", err)
	}
	return r, true, nil
}

// CreateSession stores s, after deleting up to 100 sessions expired
// before s was created.
func (s *EmbeddedStore) CreateSession(ctx context.Context, ses Session) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rec := embeddedSession{Key: ses.Key, Scope: ses.Scope, Signer: ses.Signer[:], CreatedAt: link.ToMicros(ses.CreatedAt),
		LastSeen: link.ToMicros(ses.LastSeen), ExpiresAt: link.ToMicros(ses.ExpiresAt)}
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("creating session: %w", err)
	}
	err = s.Db.Update(func(tx *bolt.Tx) error {
		b, exp := tx.Bucket(EmbeddedSessions), tx.Bucket(embeddedSessionExpiry)
		if err := pruneEmbeddedSessions(b, exp, rec.CreatedAt); err != nil {
			return err
		}
		if err := b.Put(ses.ID[:], v); err != nil {
			return err
		}
		return exp.Put(sessionExpiryKey(rec.ExpiresAt, ses.ID[:]), nil)
	})
	if err != nil {
		return fmt.Errorf("creating session: %w", err)
	}
	return nil
}

// pruneEmbeddedSessions deletes up to sessionPrune sessions that expired
// before now (Unix microseconds).
func pruneEmbeddedSessions(b, exp *bolt.Bucket, now int64) error {
	c := exp.Cursor()
	var done [][]byte
	for k, _ := c.First(); k != nil && len(done) < sessionPrune; k, _ = c.Next() {
		if len(k) != 8+SessionIDLen || int64(binary.BigEndian.Uint64(k)) >= now {
			break
		}
		done = append(done, append([]byte(nil), k...))
	}
	for _, k := range done {
		if err := b.Delete(k[8:]); err != nil {
			return err
		}
		if err := exp.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// GetSession reads the session id, ErrSessionNotFound if there is none.
func (s *EmbeddedStore) GetSession(ctx context.Context, id [SessionIDLen]byte) (Session, error) {
	if err := ctx.Err(); err != nil {
		return Session{}, err
	}
	var ses Session
	err := s.Db.View(func(tx *bolt.Tx) error {
		r, ok, err := readSession(tx.Bucket(EmbeddedSessions), id[:])
		if err != nil || !ok {
			return err
		}
		ses, err = r.session(id[:])
		return err
	})
	switch {
	case err != nil:
		return Session{}, fmt.Errorf("reading session: %w", err)
	case ses.CreatedAt.IsZero():
		return Session{}, ErrSessionNotFound
	}
	return ses, nil
}

// TouchSession records a use of the session id at seen (never moving it
// back); a session that is gone is not an error.
func (s *EmbeddedStore) TouchSession(ctx context.Context, id [SessionIDLen]byte, seen time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.Db.Batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(EmbeddedSessions)
		r, ok, err := readSession(b, id[:])
		if err != nil || !ok || r.LastSeen >= link.ToMicros(seen) {
			return err
		}
		r.LastSeen = link.ToMicros(seen)
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return b.Put(id[:], v)
	})
	if err != nil {
		return fmt.Errorf("touching session: %w", err)
	}
	return nil
}

// DeleteSession ends the session id, reporting whether there was one.
func (s *EmbeddedStore) DeleteSession(ctx context.Context, id [SessionIDLen]byte) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var found bool
	err := s.Db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(EmbeddedSessions)
		r, ok, err := readSession(b, id[:])
		if err != nil || !ok {
			return err
		}
		found = true
		if err := b.Delete(id[:]); err != nil {
			return err
		}
		return tx.Bucket(embeddedSessionExpiry).Delete(sessionExpiryKey(r.ExpiresAt, id[:]))
	})
	if err != nil {
		return false, fmt.Errorf("deleting session: %w", err)
	}
	return found, nil
}

// DeleteKeySessions ends every session of the key with fingerprint key,
// reporting how many there were.
func (s *EmbeddedStore) DeleteKeySessions(ctx context.Context, key string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int
	err := s.Db.Update(func(tx *bolt.Tx) error {
		b, exp := tx.Bucket(EmbeddedSessions), tx.Bucket(embeddedSessionExpiry)
		var del [][]byte
		err := b.ForEach(func(k, v []byte) error {
			var r embeddedSession
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("session record: %w", err)
			}
			if r.Key == key {
				del = append(del, append([]byte(nil), k...), sessionExpiryKey(r.ExpiresAt, k))
			}
			return nil
		})
		for i := 0; err == nil && i < len(del); i += 2 {
			if err = b.Delete(del[i]); err == nil {
				err = exp.Delete(del[i+1])
			}
		}
		n = len(del) / 2
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("deleting the key's sessions: %w", err)
	}
	return n, nil
}

// ListSessions returns up to limit sessions not expired at now, of the key
// with fingerprint key ("": of every key), the newest first.
func (s *EmbeddedStore) ListSessions(ctx context.Context, key string, now time.Time, limit int) ([]Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := []Session{}
	err := s.Db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(EmbeddedSessions).ForEach(func(k, v []byte) error {
			var r embeddedSession
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("session record: %w", err)
			}
			if key != "" && r.Key != key || r.ExpiresAt < link.ToMicros(now) {
				return nil
			}
			ses, err := r.session(k)
			out = append(out, ses)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	slices.SortFunc(out, func(a, b Session) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
	return out[:min(len(out), limit)], nil
}
