package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// pgRangeClicks are the clicks of every link over a range of days: hourly
// counters on the hour index ($1, $2: timestamps) and daily rollups on the
// Day index ($3, $4: dates); a click is in exactly one of the two.
const pgRangeClicks = `WITH c AS (
	SELECT code, people, bots FROM shortener_link_clicks_hourly WHERE hour >= $1 AND hour < $2
	UNION ALL
	SELECT code, people, bots FROM shortener_link_clicks_daily WHERE day >= $3::date AND day < $4::date)
`

// Overview implements Sink: two statements on the date indexes.
func (s *PostgresClickSink) ClickOverview(ctx context.Context, from, to time.Time, limit int) (clicks.Overview, error) {
	first, end := clicks.DayRange(from, to)
	o := clicks.Overview{From: first, To: end}
	args := []any{first, end, first.Format(time.DateOnly), end.Format(time.DateOnly)}
	if err := s.Pool.QueryRow(ctx, pgRangeClicks+`SELECT coalesce(sum(people), 0)::bigint, coalesce(sum(bots), 0)::bigint FROM c`,
		args...).Scan(&o.People, &o.Bots); err != nil {
		return o, fmt.Errorf("click overview: %w", err)
	}
	o.Total = o.People + o.Bots
	rows, err := s.Pool.Query(ctx, pgRangeClicks+`SELECT code, sum(people + bots)::bigint FROM c
		GROUP BY code ORDER BY 2 DESC, code COLLATE "C" LIMIT $5`, append(args, limit)...)
	if err != nil {
		return o, fmt.Errorf("click overview: %w", err)
	}
	top, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (clicks.BreakdownEntry, error) {
		var e clicks.BreakdownEntry
		return e, row.Scan(&e.Value, &e.Clicks)
	})
	if err != nil {
		return o, fmt.Errorf("click overview: %w", err)
	}
	o.Links = clicks.LinksOf(top) // a link domain's keys split into code and domain
	return o, nil
}
