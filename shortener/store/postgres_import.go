package store

import (
	"context"
	"fmt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// ImportTx implements ImportStore: one READ COMMITTED transaction. A
// concurrent import of the same code makes Insert wait on the primary key
// until the other commits; the code then reports false, and a Stored after
// it sees the committed link.
func (s *PostgresStore) ImportTx(ctx context.Context, commit bool, fn func(context.Context, link.ImportTx) error) error {
	tx, err := s.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("beginning import: %w", err)
	}
	defer tx.Rollback(ctx)
	if err := fn(ctx, pgImportTx{tx, s.Events}); err != nil || !commit {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing import: %w", err)
	}
	return nil
}

// pgImportTx is ImportTx on a PostgreSQL transaction.
type pgImportTx pgLinkTx

// Stored implements ImportTx: one query by primary key.
func (t pgImportTx) Stored(ctx context.Context, codes []string) (map[string]link.ImportLink, error) {
	rows, err := t.tx.Query(ctx, `SELECT code, `+linkColumns+`,
		COALESCE((SELECT imported FROM shortener_link_click_totals t WHERE t.code = (l.code COLLATE "default")), 0)
		FROM shortener_links l WHERE code = ANY($1::text[])`, codes)
	if err != nil {
		return nil, fmt.Errorf("reading stored links: %w", err)
	}
	defer rows.Close()
	out := make(map[string]link.ImportLink)
	for rows.Next() {
		var il link.ImportLink
		var ls linkScan
		if err := rows.Scan(append(append([]any{&il.Code}, ls.into(&il.Link)...), &il.Baseline)...); err != nil {
			return nil, fmt.Errorf("reading stored links: %w", err)
		}
		ls.finish(&il.Link)
		out[il.Code] = il
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading stored links: %w", err)
	}
	return out, nil
}

// Insert implements ImportTx: the links as pgLinkTx inserts them, then the
// baselines of those stored, in the totals row the click trigger also
// writes (its people and bots untouched), then their hourly clicks as the
// click sink adds them (the trigger adds those to people and bots).
func (t pgImportTx) Insert(ctx context.Context, links []link.ImportLink) ([]bool, error) {
	plain := make([]link.Link, len(links))
	for i, l := range links {
		plain[i] = l.Link
	}
	stored, err := pgLinkTx(t).Insert(ctx, plain)
	if err != nil {
		return nil, err
	}
	var codes []string
	var baselines []int64
	for i, l := range links {
		if stored[i] && l.Baseline > 0 {
			codes, baselines = append(codes, l.Code), append(baselines, l.Baseline)
		}
	}
	if len(codes) > 0 {
		if _, err := t.tx.Exec(ctx, `INSERT INTO shortener_link_click_totals AS t (code, imported)
			SELECT * FROM unnest($1::text[], $2::int8[])
			ON CONFLICT (code) DO UPDATE SET imported = excluded.imported`, codes, baselines); err != nil {
			return nil, fmt.Errorf("storing click baselines: %w", err)
		}
	}
	if err := insertHourly(ctx, t.tx, clicks.HourlyAggregate(links, stored)); err != nil {
		return nil, fmt.Errorf("importing click rollups: %w", err)
	}
	return stored, nil
}

var _ link.ImportStore = (*PostgresStore)(nil)
