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

// endpointColumns are the columns scanEndpoint reads, in its order.
const endpointColumns = `id, url, description, types, tags, codes, disabled, disabled_reason, keys, batch, batch_wait_ms,
	created_at, updated_at, version`

func scanEndpoint(row pgx.Row) (webhook.Endpoint, error) {
	var e webhook.Endpoint
	var keys []byte
	var waitMS int64
	err := row.Scan(&e.ID, &e.URL, &e.Description, &e.Types, &e.Tags, &e.Codes, &e.Disabled, &e.DisabledReason, &keys,
		&e.Batch, &waitMS, &e.CreatedAt, &e.UpdatedAt, &e.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, webhook.ErrNotFound
	}
	if err != nil {
		return e, err
	}
	e.BatchWait = time.Duration(waitMS) * time.Millisecond
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	e.Tags, e.Codes = nilIfEmpty(e.Tags), nilIfEmpty(e.Codes)
	if e.Keys, err = decodeKeys(keys); err != nil {
		return e, fmt.Errorf("endpoint %s: keys: %w", e.ID, err)
	}
	return e, nil
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func emptyIfNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// CreateEndpoint implements webhook.Store: the count and the insert under
// a transaction-scoped advisory lock, so concurrent creates cannot pass
// MaxEndpoints together.
func (s *PostgresStore) CreateEndpoint(ctx context.Context, e webhook.Endpoint, from link.EventCursor) error {
	keys, err := encodeKeys(e.Keys)
	if err != nil {
		return fmt.Errorf("creating webhook endpoint: %w", err)
	}
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		// Two statements: read committed takes the count's snapshot when
		// its statement starts, which must be after the lock is held.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, webhookLockKey); err != nil {
			return fmt.Errorf("creating webhook endpoint: %w", err)
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM shortener_webhook_endpoints`).Scan(&n); err != nil {
			return fmt.Errorf("creating webhook endpoint: %w", err)
		}
		if n >= webhook.MaxEndpoints {
			return webhook.ErrTooMany
		}
		_, err := tx.Exec(ctx, `INSERT INTO shortener_webhook_endpoints
			(id, url, description, types, tags, codes, disabled, disabled_reason, keys, batch, batch_wait_ms,
			 created_at, updated_at, version, cursor_tx, cursor_seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 1, $14, $15)`,
			e.ID, e.URL, e.Description, e.Types, emptyIfNil(e.Tags), emptyIfNil(e.Codes), e.Disabled, e.DisabledReason,
			keys, e.Batch, e.BatchWait.Milliseconds(), e.CreatedAt, e.UpdatedAt, from.Tx, from.Seq)
		if err != nil {
			return fmt.Errorf("creating webhook endpoint: %w", err)
		}
		return nil
	})
}

// webhookLockKey is the advisory lock key of endpoint creation: "edgekit"
// + 'w'.
const webhookLockKey int64 = 0x65646765_6b697477

// Endpoint implements webhook.Store.
func (s *PostgresStore) Endpoint(ctx context.Context, id string) (webhook.Endpoint, error) {
	e, err := scanEndpoint(s.Pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM shortener_webhook_endpoints WHERE id = $1`, id))
	if err != nil && !errors.Is(err, webhook.ErrNotFound) {
		err = fmt.Errorf("reading webhook endpoint: %w", err)
	}
	return e, err
}

// Endpoints implements webhook.Store.
func (s *PostgresStore) Endpoints(ctx context.Context) ([]webhook.Endpoint, error) {
	rows, err := s.Pool.Query(ctx, `SELECT `+endpointColumns+` FROM shortener_webhook_endpoints ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("listing webhook endpoints: %w", err)
	}
	eps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Endpoint, error) { return scanEndpoint(r) })
	if err != nil {
		return nil, fmt.Errorf("listing webhook endpoints: %w", err)
	}
	return eps, nil
}

// UpdateEndpoint implements webhook.Store: the row locked, fn applied,
// the row written back.
func (s *PostgresStore) UpdateEndpoint(ctx context.Context, id string, now time.Time, fn func(*webhook.Endpoint) error) (webhook.Endpoint, error) {
	var out webhook.Endpoint
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		e, err := scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointColumns+` FROM shortener_webhook_endpoints WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if err := fn(&e); err != nil {
			return err
		}
		e.ID, e.Version, e.UpdatedAt = id, e.Version+1, now.UTC()
		keys, err := encodeKeys(e.Keys)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE shortener_webhook_endpoints SET url = $2, description = $3, types = $4, tags = $5,
			codes = $6, disabled = $7, disabled_reason = $8, keys = $9, batch = $10, batch_wait_ms = $11, updated_at = $12,
			version = $13 WHERE id = $1`,
			id, e.URL, e.Description, e.Types, emptyIfNil(e.Tags), emptyIfNil(e.Codes), e.Disabled, e.DisabledReason, keys,
			e.Batch, e.BatchWait.Milliseconds(), e.UpdatedAt, e.Version); err != nil {
			return err
		}
		out = e
		return nil
	})
	return out, err
}

// DeleteEndpoint implements webhook.Store (its messages and attempts go
// with it: ON DELETE CASCADE).
func (s *PostgresStore) DeleteEndpoint(ctx context.Context, id string) error {
	tag, err := s.Pool.Exec(ctx, `DELETE FROM shortener_webhook_endpoints WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("deleting webhook endpoint: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return webhook.ErrNotFound
	}
	return nil
}
