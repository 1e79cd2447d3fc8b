package store

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// countDimVisitorsPG merges the batch's visitors per rule and variant
// value into their day's sketch in shortener_link_dim_visitors
// (020_clicks_dim_visitors.up.sql), each under the row its clicks went to
// (rows: what pgDims.count wrote). pgDims.count has locked every (code,
// day, dim) of the batch until commit, so no other transaction merges
// into these sketches meanwhile: the read below (a new statement, read
// committed) sees the last committed ones.
func countDimVisitorsPG(ctx context.Context, tx pgx.Tx, vis map[clicks.DimKey][]uint64, rows map[clicks.DimKey]int64) error {
	if len(vis) == 0 {
		return nil
	}
	placed, keys := clicks.PlaceDimVisitors(vis, rows)
	args := pgDims.keyArgs(keys)
	stored, err := tx.Query(ctx, `SELECT v.code, v.day, v.dim, v.value, v.visitors FROM shortener_link_dim_visitors v
		JOIN unnest($1::text[], $2::date[], $3::text[], $4::text[]) AS u(code, day, dim, value)
		ON v.code = u.code AND v.dim = u.dim AND v.day = u.day AND v.value = u.value`, args...)
	if err != nil {
		return fmt.Errorf("reading dimension visitors: %w", err)
	}
	old := make(map[clicks.DimKey][]byte, len(keys))
	var k clicks.DimKey
	var day time.Time
	var b []byte
	if _, err := pgx.ForEachRow(stored, []any{&k.Code, &day, &k.Dim, &k.Val, &b}, func() error {
		k.Day = day.Unix()
		old[k] = bytes.Clone(b)
		return nil
	}); err != nil {
		return fmt.Errorf("reading dimension visitors: %w", err)
	}
	sketches := make([][]byte, len(keys))
	for i, k := range keys {
		if sketches[i], err = clicks.AddVisitors(old[k], placed[k]); err != nil {
			return fmt.Errorf("counting dimension visitors: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO shortener_link_dim_visitors AS v (code, day, dim, value, visitors)
		SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::text[], $5::bytea[])
		ON CONFLICT (code, dim, day, value) DO UPDATE SET visitors = excluded.visitors`,
		append(args, sketches)...); err != nil {
		return fmt.Errorf("counting dimension visitors: %w", err)
	}
	return nil
}

// dimUniquesPG sets the Uniques of a link's breakdown by a dimension of
// clicks.UniqueDims over the days in [first, end): the sketches of the
// entries' values.
func (s *PostgresClickSink) dimUniquesPG(ctx context.Context, code, dim string, first, end time.Time, entries []clicks.BreakdownEntry) error {
	values := make([]string, len(entries))
	for i, e := range entries {
		values[i] = e.Value
	}
	rows, err := s.Pool.Query(ctx, `SELECT value, visitors FROM shortener_link_dim_visitors
		WHERE code = $1 AND dim = $2 AND day >= $3::date AND day < $4::date AND value = ANY($5::text[])`,
		code, dim, first.Format(time.DateOnly), end.Format(time.DateOnly), values)
	if err != nil {
		return fmt.Errorf("breakdown uniques: %w", err)
	}
	sketches := make(map[string][][]byte, len(entries))
	var v string
	var b []byte
	if _, err := pgx.ForEachRow(rows, []any{&v, &b}, func() error {
		sketches[v] = append(sketches[v], bytes.Clone(b))
		return nil
	}); err != nil {
		return fmt.Errorf("breakdown uniques: %w", err)
	}
	clicks.WithDimUniques(entries, sketches)
	return nil
}
