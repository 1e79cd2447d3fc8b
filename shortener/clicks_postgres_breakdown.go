package shortener

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ClickBreakdown implements ClickSink on the daily dimension and referrer
// rollups (primary keys led by code, then dimension and day).
func (s *postgresClickSink) ClickBreakdown(ctx context.Context, code, dim string, from, to time.Time, limit int) ([]BreakdownEntry, error) {
	first, end := dayRange(from, to)
	args := []any{code, first.Format(time.DateOnly), end.Format(time.DateOnly), limit}
	q := `SELECT host, sum(count)::bigint FROM shortener_link_referrers_daily
		WHERE code = $1 AND day >= $2::date AND day < $3::date GROUP BY 1 ORDER BY 2 DESC, host COLLATE "C" LIMIT $4`
	if dim != DimReferrer {
		q = `SELECT value, sum(count)::bigint FROM shortener_link_dims_daily
			WHERE code = $1 AND day >= $2::date AND day < $3::date AND dim = $5 GROUP BY 1 ORDER BY 2 DESC, value COLLATE "C" LIMIT $4`
		args = append(args, dim)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("click breakdown: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[BreakdownEntry])
	if err != nil {
		return nil, fmt.Errorf("click breakdown: %w", err)
	}
	if out == nil {
		out = []BreakdownEntry{}
	}
	return out, nil
}
