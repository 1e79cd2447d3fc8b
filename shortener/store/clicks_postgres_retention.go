package store

import (
	"context"
	"fmt"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// postgresPruneSteps are the statements of one prune page, in order, each
// deleting at most $2 rows (a short statement of its own on the date
// indexes of 003_click_bounds.up.sql, 012_clicks_daily.up.sql,
// 014_clicks_dims.up.sql and 019_clicks_dim_visitors.up.sql). Rows a
// click transaction holds are skipped, not waited for: the next prune
// takes them.
var postgresPruneSteps = [...]struct {
	sql   string
	daily bool // $1 is the daily cutoff (else the hourly one)
}{
	// Hourly counters past both retentions go at once.
	{`DELETE FROM shortener_link_clicks_hourly WHERE ctid IN (
		SELECT ctid FROM shortener_link_clicks_hourly WHERE hour < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`, true},
	// Hourly counters past the hourly retention move to their day in one
	// statement: deleted and added to the daily rollup together, so a
	// click counts in exactly one of them. Days are locked in (code, day)
	// order, as the click transaction locks them (after its hourly rows),
	// so the two never deadlock.
	{`WITH gone AS (
		DELETE FROM shortener_link_clicks_hourly WHERE ctid IN (
			SELECT ctid FROM shortener_link_clicks_hourly WHERE hour < $1 AND hour >= $3 LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING code, hour, people, bots
	), rolled AS (
		INSERT INTO shortener_link_clicks_daily AS d (code, day, people, bots)
		SELECT code, (hour AT TIME ZONE 'UTC')::date, sum(people), sum(bots) FROM gone GROUP BY 1, 2 ORDER BY 1, 2
		ON CONFLICT (code, day) DO UPDATE SET people = d.people + excluded.people, bots = d.bots + excluded.bots
		RETURNING 1
	) SELECT count(*) FROM gone`, false},
	{`DELETE FROM shortener_link_clicks_daily WHERE ctid IN (
		SELECT ctid FROM shortener_link_clicks_daily WHERE day < $1::date LIMIT $2 FOR UPDATE SKIP LOCKED)`, true},
	{`DELETE FROM shortener_link_referrers_daily WHERE ctid IN (
		SELECT ctid FROM shortener_link_referrers_daily WHERE day < $1::date LIMIT $2 FOR UPDATE SKIP LOCKED)`, true},
	{`DELETE FROM shortener_link_referrer_days WHERE ctid IN (
		SELECT ctid FROM shortener_link_referrer_days WHERE day < $1::date LIMIT $2 FOR UPDATE SKIP LOCKED)`, true},
	{`DELETE FROM shortener_link_dims_daily WHERE ctid IN (
		SELECT ctid FROM shortener_link_dims_daily WHERE day < $1::date LIMIT $2 FOR UPDATE SKIP LOCKED)`, true},
	{`DELETE FROM shortener_link_dim_visitors WHERE ctid IN (
		SELECT ctid FROM shortener_link_dim_visitors WHERE day < $1::date LIMIT $2 FOR UPDATE SKIP LOCKED)`, true},
	{`DELETE FROM shortener_link_dim_days WHERE ctid IN (
		SELECT ctid FROM shortener_link_dim_days WHERE day < $1::date LIMIT $2 FOR UPDATE SKIP LOCKED)`, true},
}

// PruneClicks implements ClickPruner: the salts of days before cut.Today,
// then up to limit rows in all, by the steps of postgresPruneSteps.
func (s *PostgresClickSink) PruneClicks(ctx context.Context, cut clicks.ClickCutoffs, limit int) (int, bool, error) {
	daily, hourly := cut.Daily.UTC(), cut.Hourly.UTC()
	if !cut.Today.IsZero() {
		if _, err := s.Pool.Exec(ctx, `DELETE FROM shortener_visitor_salts WHERE day < $1::date`, pgCutoff(cut.Today.UTC())); err != nil {
			return 0, false, fmt.Errorf("deleting old visitor salts: %w", err)
		}
	}
	var deleted int
	for _, step := range postgresPruneSteps {
		if deleted >= limit {
			break
		}
		var n int64
		if step.daily {
			tag, err := s.Pool.Exec(ctx, step.sql, pgCutoff(daily), limit-deleted)
			if err != nil {
				return deleted, false, fmt.Errorf("pruning clicks: %w", err)
			}
			n = tag.RowsAffected()
		} else if hourly.After(daily) {
			if err := s.Pool.QueryRow(ctx, step.sql, hourly, limit-deleted, daily).Scan(&n); err != nil {
				return deleted, false, fmt.Errorf("rolling up hourly clicks: %w", err)
			}
		}
		deleted += int(n)
	}
	return deleted, deleted < limit, nil
}

// pgCutoff is a cutoff as a parameter that compares with both timestamptz
// and date columns: the UTC midnight as "2006-01-02T00:00:00Z".
func pgCutoff(t time.Time) string { return t.Format(time.RFC3339) }

var _ clicks.ClickPruner = (*PostgresClickSink)(nil)
