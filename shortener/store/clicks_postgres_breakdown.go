package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// ClickBreakdown implements Sink on the daily dimension and referrer
// rollups: for a link on their primary keys (led by code), across links
// on their (dim, day) and day indexes. A link's breakdown by rule or
// variant adds each value's uniques.
func (s *PostgresClickSink) ClickBreakdown(ctx context.Context, code, dim string, from, to time.Time, limit int) ([]clicks.BreakdownEntry, error) {
	first, end := clicks.DayRange(from, to)
	args := []any{first.Format(time.DateOnly), end.Format(time.DateOnly), limit}
	table, col, where := "shortener_link_referrers_daily", "host", "day >= $1::date AND day < $2::date"
	if dim != clicks.DimReferrer {
		args = append(args, dim)
		table, col, where = "shortener_link_dims_daily", "value", where+" AND dim = $4"
	}
	if code != "" {
		args = append(args, code)
		where += fmt.Sprintf(" AND code = $%d", len(args))
	}
	rows, err := s.Pool.Query(ctx, fmt.Sprintf(`SELECT %[1]s, sum(count)::bigint FROM %[2]s WHERE %[3]s
		GROUP BY 1 ORDER BY 2 DESC, %[1]s COLLATE "C" LIMIT $3`, col, table, where), args...)
	if err != nil {
		return nil, fmt.Errorf("click breakdown: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (e clicks.BreakdownEntry, err error) {
		return e, r.Scan(&e.Value, &e.Clicks)
	})
	if err != nil {
		return nil, fmt.Errorf("click breakdown: %w", err)
	}
	if out == nil {
		out = []clicks.BreakdownEntry{}
	}
	if code != "" && clicks.HasUniques(dim) {
		if err := s.dimUniquesPG(ctx, code, dim, first, end, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}
