package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Edit implements LinkEditor: one transaction that locks the link's row
// (SELECT ... FOR UPDATE), so concurrent edits of one link take turns and
// each sees the version the one before it left; the UPDATE and the
// history row commit together.
func (s *PostgresStore) Edit(ctx context.Context, code string, e link.Edit) (link.Link, error) {
	tx, err := s.Pool.Begin(ctx)
	if err != nil {
		return link.Link{}, fmt.Errorf("editing link: %w", err)
	}
	defer tx.Rollback(ctx)
	cur, err := scanLink(tx.QueryRow(ctx,
		`SELECT `+linkColumns+` FROM shortener_links WHERE code = $1 FOR UPDATE`, code), code)
	if errors.Is(err, link.ErrNotFound) {
		return link.Link{}, link.ErrNotFound
	}
	if err != nil {
		return link.Link{}, fmt.Errorf("editing link: %w", err)
	}
	next, changes, err := link.ApplyEdit(cur, e)
	if err != nil || len(changes) == 0 {
		return next, err
	}
	diff, err := json.Marshal(changes)
	if err != nil {
		return link.Link{}, fmt.Errorf("editing link: %w", err)
	}
	tags := next.Tags
	if tags == nil {
		tags = []string{}
	}
	if _, err := tx.Exec(ctx, "WITH "+changeCTE(
		`UPDATE shortener_links
		 SET long_url = $2, expires_at = $3, title = $4, tags = $5, notes = $6, version = $7,
		     redirect_status = $8, valid_from = $9, max_clicks = $10, forward_query = $11,
		     targeting = $12, fallback_url = $13
		 WHERE code = $1`, link.EventUpdated, "", s.Events)+" SELECT count(*) FROM ch",
		code, next.LongURL, nullTime(next.ExpiresAt), next.Title, tags, next.Notes, next.Version,
		next.RedirectStatus, nullTime(next.ValidFrom), next.MaxClicks, next.ForwardQuery,
		targetingText(next.Targeting), next.FallbackURL); err != nil {
		return link.Link{}, fmt.Errorf("editing link: %w", err)
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO shortener_link_history (code, version, at, key_fp, changes) VALUES ($1, $2, $3, $4, $5)`,
		code, next.Version, e.At, e.Key, diff); err != nil {
		return link.Link{}, fmt.Errorf("editing link: recording history: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return link.Link{}, fmt.Errorf("editing link: %w", err)
	}
	return next, nil
}

// History implements LinkEditor: a backward range scan of the history's
// primary key, after a probe of the link.
func (s *PostgresStore) History(ctx context.Context, code string, before int64, limit int) ([]link.HistoryEntry, error) {
	limit = min(max(limit, 1), link.MaxHistoryPage)
	if before <= 0 {
		before = 1<<63 - 1
	}
	var exists bool
	if err := s.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM shortener_links WHERE code = $1)`, code).Scan(&exists); err != nil {
		return nil, fmt.Errorf("reading history: %w", err)
	}
	if !exists {
		return nil, link.ErrNotFound
	}
	rows, err := s.Pool.Query(ctx,
		`SELECT version, at, key_fp, changes FROM shortener_link_history
		 WHERE code = $1 AND version < $2 ORDER BY version DESC LIMIT $3`, code, before, limit)
	if err != nil {
		return nil, fmt.Errorf("reading history: %w", err)
	}
	entries, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (link.HistoryEntry, error) {
		var h link.HistoryEntry
		var diff []byte
		if err := row.Scan(&h.Version, &h.At, &h.Key, &diff); err != nil {
			return h, err
		}
		h.At = h.At.UTC()
		return h, json.Unmarshal(diff, &h.Changes)
	})
	if err != nil {
		return nil, fmt.Errorf("reading history: %w", err)
	}
	return entries, nil
}

var _ link.LinkEditor = (*PostgresStore)(nil)
