package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"time"
)

// The dashboard sessions in PostgreSQL: the table of
// migrations/017_ui_sessions.up.sql.

const sessionColumns = `id, key_fingerprint, scope, signer, created_at, last_seen_at, expires_at`

func scanSession(row pgx.Row) (Session, error) {
	var s Session
	var id, signer []byte
	if err := row.Scan(&id, &s.Key, &s.Scope, &signer, &s.CreatedAt, &s.LastSeen, &s.ExpiresAt); err != nil {
		return Session{}, err
	}
	if len(id) != SessionIDLen || len(signer) != len(s.Signer) {
		return Session{}, fmt.Errorf("session row with a %d-byte id and a %d-byte signer", len(id), len(signer))
	}
	copy(s.ID[:], id)
	copy(s.Signer[:], signer)
	return s, nil
}

// CreateSession stores s, after deleting up to 100 sessions expired
// before s was created.
func (s *PostgresStore) CreateSession(ctx context.Context, ses Session) error {
	if _, err := s.Pool.Exec(ctx, `DELETE FROM shortener_ui_sessions WHERE id IN
		(SELECT id FROM shortener_ui_sessions WHERE expires_at < $1 LIMIT $2)`, ses.CreatedAt, sessionPrune); err != nil {
		return fmt.Errorf("pruning sessions: %w", err)
	}
	_, err := s.Pool.Exec(ctx, `INSERT INTO shortener_ui_sessions (`+sessionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, ses.ID[:], ses.Key, ses.Scope, ses.Signer[:], ses.CreatedAt, ses.LastSeen, ses.ExpiresAt)
	if err != nil {
		return fmt.Errorf("creating session: %w", err)
	}
	return nil
}

// GetSession reads the session id, ErrSessionNotFound if there is none.
func (s *PostgresStore) GetSession(ctx context.Context, id [SessionIDLen]byte) (Session, error) {
	ses, err := scanSession(s.Pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM shortener_ui_sessions WHERE id = $1`, id[:]))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Session{}, ErrSessionNotFound
	case err != nil:
		return Session{}, fmt.Errorf("reading session: %w", err)
	}
	return ses, nil
}

// TouchSession records a use of the session id at seen (never moving it
// back); a session that is gone is not an error.
func (s *PostgresStore) TouchSession(ctx context.Context, id [SessionIDLen]byte, seen time.Time) error {
	if _, err := s.Pool.Exec(ctx, `UPDATE shortener_ui_sessions SET last_seen_at = $2
		WHERE id = $1 AND last_seen_at < $2`, id[:], seen); err != nil {
		return fmt.Errorf("touching session: %w", err)
	}
	return nil
}

// DeleteSession ends the session id, reporting whether there was one.
func (s *PostgresStore) DeleteSession(ctx context.Context, id [SessionIDLen]byte) (bool, error) {
	tag, err := s.Pool.Exec(ctx, `DELETE FROM shortener_ui_sessions WHERE id = $1`, id[:])
	if err != nil {
		return false, fmt.Errorf("deleting session: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// DeleteKeySessions ends every session of the key with fingerprint key,
// reporting how many there were.
func (s *PostgresStore) DeleteKeySessions(ctx context.Context, key string) (int, error) {
	tag, err := s.Pool.Exec(ctx, `DELETE FROM shortener_ui_sessions WHERE key_fingerprint = $1`, key)
	if err != nil {
		return 0, fmt.Errorf("deleting the key's sessions: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// ListSessions returns up to limit sessions not expired at now, of the key
// with fingerprint key ("": of every key), the newest first.
func (s *PostgresStore) ListSessions(ctx context.Context, key string, now time.Time, limit int) ([]Session, error) {
	rows, err := s.Pool.Query(ctx, `SELECT `+sessionColumns+` FROM shortener_ui_sessions
		WHERE ($1 = '' OR key_fingerprint = $1) AND expires_at >= $2
		ORDER BY created_at DESC, id LIMIT $3`, key, now, limit)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	defer rows.Close()
	out := []Session{}
	for rows.Next() {
		ses, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("listing sessions: %w", err)
		}
		out = append(out, ses)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	return out, nil
}
