package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// expiryMark names the link.expired sweep's mark.
const expiryMark = "expired"

// RecordExpired implements link.ExpiryLog: the mark row locked, the
// events inserted from the expiry index, the mark moved, in one
// transaction.
func (s *PostgresStore) RecordExpired(ctx context.Context, upTo time.Time) (int, error) {
	if !s.Events {
		return 0, nil
	}
	n := 0
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO shortener_event_marks (name, at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
			expiryMark, upTo)
		if err != nil || tag.RowsAffected() == 1 {
			return err // the first sweep sets the mark only
		}
		var mark time.Time
		if err := tx.QueryRow(ctx, `SELECT at FROM shortener_event_marks WHERE name = $1 FOR UPDATE`, expiryMark).Scan(&mark); err != nil {
			return err
		}
		if !upTo.After(mark) {
			return nil
		}
		tag, err = tx.Exec(ctx, `INSERT INTO shortener_events (type, at, code, data)
			SELECT $1, l.expires_at, l.code, to_jsonb(l) FROM shortener_links l
			WHERE l.expires_at > $2 AND l.expires_at <= $3 AND l.revoked_at IS NULL ORDER BY l.expires_at, l.code`,
			link.EventExpired, mark, upTo)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		_, err = tx.Exec(ctx, `UPDATE shortener_event_marks SET at = $2 WHERE name = $1`, expiryMark, upTo)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("recording expired links: %w", err)
	}
	return n, nil
}

// embeddedExpiryMark is the mark's key in the meta bucket: Unix
// microseconds, 8 bytes big-endian.
var embeddedExpiryMark = []byte("expiry_mark")

// RecordExpired implements link.ExpiryLog with a walk of the links (the
// embedded store serves one instance; its listings walk them too).
func (s *EmbeddedStore) RecordExpired(ctx context.Context, upTo time.Time) (int, error) {
	if !s.Events {
		return 0, ctx.Err()
	}
	n := 0
	err := s.Db.Update(func(tx *bolt.Tx) error {
		meta, to := tx.Bucket(embeddedMeta), link.ToMicros(upTo)
		v := meta.Get(embeddedExpiryMark)
		if v == nil || len(v) != 8 {
			return meta.Put(embeddedExpiryMark, binary.BigEndian.AppendUint64(nil, uint64(to)))
		}
		mark := int64(binary.BigEndian.Uint64(v))
		if to <= mark {
			return nil
		}
		err := tx.Bucket(EmbeddedLinks).ForEach(func(k, v []byte) error {
			var rec embeddedRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("link %q: %w", k, err)
			}
			if rec.ExpiresAt <= mark || rec.ExpiresAt > to || rec.RevokedAt != 0 {
				return nil
			}
			n++
			return recordEventAt(tx, link.EventExpired, string(k), v, rec.ExpiresAt)
		})
		if err != nil {
			return err
		}
		return meta.Put(embeddedExpiryMark, binary.BigEndian.AppendUint64(nil, uint64(to)))
	})
	if err != nil {
		return 0, fmt.Errorf("recording expired links: %w", err)
	}
	return n, nil
}

var (
	_ link.ExpiryLog = (*PostgresStore)(nil)
	_ link.ExpiryLog = (*EmbeddedStore)(nil)
)
