package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// Lease implements webhook.Store, on PostgreSQL's clock.
func (s *PostgresStore) Lease(ctx context.Context, id, owner string, d time.Duration) (webhook.Endpoint, link.EventCursor, bool, error) {
	var cur link.EventCursor
	e, err := scanEndpointCursor(s.Pool.QueryRow(ctx, `UPDATE shortener_webhook_endpoints
		SET lease_owner = $2, lease_until = clock_timestamp() + $3 * interval '1 microsecond'
		WHERE id = $1 AND (lease_owner = $2 OR lease_until IS NULL OR lease_until < clock_timestamp())
		RETURNING `+endpointColumns+`, cursor_tx, cursor_seq`, id, owner, d.Microseconds()), &cur)
	if errors.Is(err, webhook.ErrNotFound) {
		if _, err := s.Endpoint(ctx, id); err != nil {
			return webhook.Endpoint{}, cur, false, err
		}
		return webhook.Endpoint{}, cur, false, nil // another owner's
	}
	if err != nil {
		return e, cur, false, fmt.Errorf("leasing webhook endpoint: %w", err)
	}
	return e, cur, true, nil
}

// Release implements webhook.Store.
func (s *PostgresStore) Release(ctx context.Context, id, owner string) error {
	_, err := s.Pool.Exec(ctx, `UPDATE shortener_webhook_endpoints SET lease_until = NULL
		WHERE id = $1 AND lease_owner = $2`, id, owner)
	if err != nil {
		return fmt.Errorf("releasing webhook endpoint: %w", err)
	}
	return nil
}

// scanEndpointCursor reads endpointColumns and the cursor.
func scanEndpointCursor(row pgx.Row, cur *link.EventCursor) (webhook.Endpoint, error) {
	return scanEndpoint(rowFunc(func(dest ...any) error {
		return row.Scan(append(dest, &cur.Tx, &cur.Seq)...)
	}))
}

// rowFunc is a pgx.Row of a scan function.
type rowFunc func(dest ...any) error

func (f rowFunc) Scan(dest ...any) error { return f(dest...) }

// holdLease locks the endpoint's row in tx if owner holds its lease.
func holdLease(ctx context.Context, tx pgx.Tx, id, owner string) error {
	var ok bool
	err := tx.QueryRow(ctx, `SELECT lease_owner = $2 AND lease_until > clock_timestamp()
		FROM shortener_webhook_endpoints WHERE id = $1 FOR UPDATE`, id, owner).Scan(&ok)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return webhook.ErrNotFound
	case err != nil:
		return err
	case !ok:
		return webhook.ErrLeaseLost
	}
	return nil
}

// Enqueue implements webhook.Store: the messages and the cursor in one
// transaction, under the lease.
func (s *PostgresStore) Enqueue(ctx context.Context, id, owner string, msgs []webhook.Message, cursor link.EventCursor) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if err := holdLease(ctx, tx, id, owner); err != nil {
			return err
		}
		if len(msgs) > 0 {
			rows := make([][]any, len(msgs))
			for i, m := range msgs {
				rows[i] = []any{m.ID, id, m.Type, m.At, m.Body, m.Events, string(webhook.StatePending), 0, m.NextAt}
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"shortener_webhook_messages"},
				[]string{"id", "endpoint", "type", "at", "body", "events", "state", "attempts", "next_at"},
				pgx.CopyFromRows(rows)); err != nil {
				return fmt.Errorf("enqueueing webhook messages: %w", err)
			}
		}
		_, err := tx.Exec(ctx, `UPDATE shortener_webhook_endpoints SET cursor_tx = $2, cursor_seq = $3 WHERE id = $1`,
			id, cursor.Tx, cursor.Seq)
		return err
	})
}

// messageColumns are the columns scanMessage reads, in its order.
const messageColumns = `id, endpoint, type, at, body, events, state, attempts, next_at, series`

func scanMessage(r pgx.CollectableRow) (webhook.Message, error) {
	var m webhook.Message
	var state string
	err := r.Scan(&m.ID, &m.Endpoint, &m.Type, &m.At, &m.Body, &m.Events, &state, &m.Attempts, &m.NextAt, &m.Series)
	m.State, m.At, m.NextAt = webhook.State(state), m.At.UTC(), m.NextAt.UTC()
	return m, err
}

// Due implements webhook.Store.
func (s *PostgresStore) Due(ctx context.Context, id string, now time.Time, limit int) ([]webhook.Message, error) {
	rows, err := s.Pool.Query(ctx, `SELECT `+messageColumns+` FROM shortener_webhook_messages
		WHERE endpoint = $1 AND state = 'pending' AND next_at <= $2 ORDER BY next_at, id LIMIT $3`,
		id, now, min(max(limit, 1), maxMessagePage))
	if err != nil {
		return nil, fmt.Errorf("reading due webhook messages: %w", err)
	}
	msgs, err := pgx.CollectRows(rows, scanMessage)
	if err != nil {
		return nil, fmt.Errorf("reading due webhook messages: %w", err)
	}
	return msgs, nil
}

// maxMessagePage bounds one Due or Messages.
const maxMessagePage = 1000

// Settle implements webhook.Store: attempts and states in one
// transaction, under the lease.
func (s *PostgresStore) Settle(ctx context.Context, id, owner string, results []webhook.Result, disable string) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if err := holdLease(ctx, tx, id, owner); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, r := range results {
			a := r.Attempt
			b.Queue(`INSERT INTO shortener_webhook_attempts (message, n, at, status, latency_us, body, error)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (message, n) DO NOTHING`,
				a.Message, a.N, a.At, a.Status, a.Latency.Microseconds(), nonNil(a.Body), a.Error)
			b.Queue(`UPDATE shortener_webhook_messages SET state = $3, attempts = $4, next_at = $5 WHERE id = $1 AND endpoint = $2`,
				a.Message, id, string(r.State), a.N, r.NextAt)
		}
		if disable != "" {
			b.Queue(`UPDATE shortener_webhook_endpoints SET disabled = true, disabled_reason = $2, version = version + 1,
				updated_at = clock_timestamp() WHERE id = $1`, id, disable)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Messages implements webhook.Store.
func (s *PostgresStore) Messages(ctx context.Context, id string, state webhook.State, before string, limit int) ([]webhook.Message, error) {
	if before == "" {
		before = "\U0010FFFF"
	}
	rows, err := s.Pool.Query(ctx, `SELECT `+messageColumns+` FROM shortener_webhook_messages
		WHERE endpoint = $1 AND id < $2 AND ($3 = '' OR state = $3) ORDER BY id DESC LIMIT $4`,
		id, before, string(state), min(max(limit, 1), maxMessagePage))
	if err != nil {
		return nil, fmt.Errorf("listing webhook messages: %w", err)
	}
	msgs, err := pgx.CollectRows(rows, scanMessage)
	if err != nil {
		return nil, fmt.Errorf("listing webhook messages: %w", err)
	}
	return msgs, nil
}

// Attempts implements webhook.Store.
func (s *PostgresStore) Attempts(ctx context.Context, id, msgID string) ([]webhook.AttemptLog, error) {
	var exists bool
	if err := s.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM shortener_webhook_messages WHERE id = $1 AND endpoint = $2)`,
		msgID, id).Scan(&exists); err != nil {
		return nil, fmt.Errorf("listing webhook attempts: %w", err)
	}
	if !exists {
		return nil, webhook.ErrNoMessage
	}
	rows, err := s.Pool.Query(ctx, `SELECT message, n, at, status, latency_us, body, error FROM shortener_webhook_attempts
		WHERE message = $1 ORDER BY n`, msgID)
	if err != nil {
		return nil, fmt.Errorf("listing webhook attempts: %w", err)
	}
	logs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.AttemptLog, error) {
		var a webhook.AttemptLog
		var us int64
		err := r.Scan(&a.Message, &a.N, &a.At, &a.Status, &us, &a.Body, &a.Error)
		a.At, a.Latency = a.At.UTC(), time.Duration(us)*time.Microsecond
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing webhook attempts: %w", err)
	}
	return logs, nil
}

// Replay implements webhook.Store.
func (s *PostgresStore) Replay(ctx context.Context, id, msgID string, since, now time.Time) (int, error) {
	tag, err := s.Pool.Exec(ctx, `UPDATE shortener_webhook_messages SET state = 'pending', next_at = $4, series = attempts
		WHERE endpoint = $1 AND (CASE WHEN $2 = '' THEN at >= $3 ELSE id = $2 END)`, id, msgID, since, now)
	if err != nil {
		return 0, fmt.Errorf("replaying webhook messages: %w", err)
	}
	if msgID != "" && tag.RowsAffected() == 0 {
		return 0, webhook.ErrNoMessage
	}
	return int(tag.RowsAffected()), nil
}

// Prune implements webhook.Store.
func (s *PostgresStore) Prune(ctx context.Context, cutoff time.Time) error {
	if _, err := s.Pool.Exec(ctx, `DELETE FROM shortener_webhook_messages WHERE made_at < $1 AND state <> 'pending'`, cutoff); err != nil {
		return fmt.Errorf("pruning webhook messages: %w", err)
	}
	if _, err := s.Pool.Exec(ctx, `DELETE FROM shortener_events WHERE at < $1`, cutoff); err != nil {
		return fmt.Errorf("pruning link events: %w", err)
	}
	return nil
}

// Backlog implements webhook.Store: counts through the indexes, the
// outbox's size from the planner's statistics (no scan).
func (s *PostgresStore) Backlog(ctx context.Context) (webhook.Backlog, error) {
	var b webhook.Backlog
	var oldestPending, oldestEvent *time.Time
	err := s.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM shortener_webhook_messages WHERE state = 'pending'),
		(SELECT min(made_at) FROM shortener_webhook_messages WHERE state = 'pending'),
		(SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'shortener_events'::regclass),
		(SELECT min(at) FROM shortener_events)`).Scan(&b.Pending, &oldestPending, &b.Events, &oldestEvent)
	if err != nil {
		return b, fmt.Errorf("reading the webhook backlog: %w", err)
	}
	b.OldestPending, b.OldestEvent = utcOrZero(oldestPending), utcOrZero(oldestEvent)
	return b, nil
}

var _ webhook.Store = (*PostgresStore)(nil)
