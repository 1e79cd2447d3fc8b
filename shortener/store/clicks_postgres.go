package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// clickBatchRetention is how long applied batch IDs are kept: far longer
// than any replay (a pending stream entry, a resent flush) can take.
const clickBatchRetention = 7 * 24 * time.Hour

// PostgresClickSink keeps click counters in the tables of
// migrations/002_clicks.up.sql, 003_click_bounds.up.sql,
// 012_clicks_daily.up.sql, 014_clicks_dims.up.sql and
// 019_clicks_dim_visitors.up.sql.
type PostgresClickSink struct {
	Pool *pgxpool.Pool
	// Events: record each counted click in the outbox (shortener_events,
	// type "click", clicks.ClickEvent), in the transaction that counts
	// it. A handler with webhooks on clicks sets it; safe to change at
	// any time.
	Events    atomic.Bool
	referrers int          // named referrer hosts (and values of each dimension) per link per day
	lastPrune atomic.Int64 // unix seconds
}

// NewPostgresClickSink returns the sink on pool; referrers <= 0 stands for
// DefaultClicksReferrers.
func NewPostgresClickSink(pool *pgxpool.Pool, referrers int) *PostgresClickSink {
	if referrers <= 0 {
		referrers = clicks.DefaultClicksReferrers
	}
	return &PostgresClickSink{Pool: pool, referrers: referrers}
}

// ApplyClicks implements Sink in one transaction: the batch IDs are
// inserted first and only the batches whose IDs were new are counted.
// Deadlocks and serialization failures are retried.
func (s *PostgresClickSink) ApplyClicks(ctx context.Context, batches []clicks.Batch) (int, error) {
	if len(batches) == 0 {
		return 0, nil
	}
	for attempt := 1; ; attempt++ {
		n, err := s.apply(ctx, batches)
		var pgErr *pgconn.PgError
		if err != nil && attempt < 5 && errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001") {
			continue
		}
		if err == nil {
			s.prune(ctx)
		}
		return n, err
	}
}

func (s *PostgresClickSink) apply(ctx context.Context, batches []clicks.Batch) (int, error) {
	ids := make([]string, 0, len(batches))
	for _, b := range batches {
		ids = append(ids, b.ID)
	}
	slices.Sort(ids)
	// Read committed, whatever the database's default: the referrer cap
	// relies on each statement seeing what was committed before it began.
	tx, err := s.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return 0, fmt.Errorf("click transaction: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after Commit
	rows, err := tx.Query(ctx, `INSERT INTO shortener_click_batches (id) SELECT unnest($1::text[])
		ON CONFLICT (id) DO NOTHING RETURNING id`, ids)
	if err != nil {
		return 0, fmt.Errorf("recording click batches: %w", err)
	}
	fresh, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("recording click batches: %w", err)
	}
	todo := freshBatches(batches, fresh)
	if len(todo) == 0 {
		return 0, tx.Commit(ctx)
	}
	agg := clicks.AggregateClicks(todo)
	if err := insertHourly(ctx, tx, agg); err != nil {
		return 0, err
	}
	if err := countVisitorsPG(ctx, tx, agg); err != nil {
		return 0, err
	}
	if _, err := pgReferrers.count(ctx, tx, agg.Referrers, s.referrers); err != nil {
		return 0, err
	}
	dims, err := pgDims.count(ctx, tx, agg.Dims, s.referrers)
	if err != nil {
		return 0, err
	}
	if err := countDimVisitorsPG(ctx, tx, agg.DimVisitors, dims); err != nil {
		return 0, err
	}
	if s.Events.Load() {
		if err := insertClickEvents(ctx, tx, todo); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("committing clicks: %w", err)
	}
	return len(todo), nil
}

// freshBatches keeps the batches whose ID is in fresh, each ID once.
func freshBatches(batches []clicks.Batch, fresh []string) []clicks.Batch {
	want := make(map[string]bool, len(fresh))
	for _, id := range fresh {
		want[id] = true
	}
	var out []clicks.Batch
	for _, b := range batches {
		if want[b.ID] {
			out = append(out, b)
			delete(want, b.ID)
		}
	}
	return out
}

// prune deletes old batch IDs, at most once an hour per sink.
func (s *PostgresClickSink) prune(ctx context.Context) {
	now := time.Now().Unix()
	last := s.lastPrune.Load()
	if now-last < 3600 || !s.lastPrune.CompareAndSwap(last, now) {
		return
	}
	_, _ = s.Pool.Exec(ctx, `DELETE FROM shortener_click_batches WHERE applied_at < now() - make_interval(secs => $1)`,
		clickBatchRetention.Seconds())
}

// Stats implements Sink.
func (s *PostgresClickSink) ClickStats(ctx context.Context, code string, from, to time.Time) (clicks.Stats, error) {
	st := clicks.Stats{Code: code, Hourly: []link.HourlyClicks{}, Referrers: []clicks.ReferrerClicks{}}
	rows, err := s.Pool.Query(ctx, `SELECT hour, people, bots FROM shortener_link_clicks_hourly
		WHERE code = $1 AND hour >= $2 AND hour < $3 ORDER BY hour`, code, clicks.HourFloor(from), to)
	if err != nil {
		return st, fmt.Errorf("click stats: %w", err)
	}
	for rows.Next() {
		var h link.HourlyClicks
		if err := rows.Scan(&h.Hour, &h.People, &h.Bots); err != nil {
			rows.Close()
			return st, fmt.Errorf("click stats: %w", err)
		}
		h.Hour = h.Hour.UTC()
		st.Hourly = append(st.Hourly, h)
		st.People += h.People
		st.Bots += h.Bots
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("click stats: %w", err)
	}
	firstDay, endDay := clicks.DayRange(from, to)
	if err := s.readDaily(ctx, &st, firstDay, endDay); err != nil {
		return st, err
	}
	st.Total = st.People + st.Bots
	rows, err = s.Pool.Query(ctx, `SELECT host, sum(count)::bigint FROM shortener_link_referrers_daily
		WHERE code = $1 AND day >= $2::date AND day < $3::date GROUP BY host ORDER BY 2 DESC, 1 LIMIT $4`,
		code, firstDay.Format(time.DateOnly), endDay.Format(time.DateOnly), clicks.TopReferrers)
	if err != nil {
		return st, fmt.Errorf("click referrers: %w", err)
	}
	refs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[clicks.ReferrerClicks])
	if err != nil {
		return st, fmt.Errorf("click referrers: %w", err)
	}
	if refs != nil {
		st.Referrers = refs
	}
	all, err := s.totals(ctx, code)
	if err != nil {
		return st, err
	}
	st.AllTime = &all
	return st, nil
}

// readDaily adds the daily rollups of the days in [first, end) to st.
func (s *PostgresClickSink) readDaily(ctx context.Context, st *clicks.Stats, first, end time.Time) error {
	rows, err := s.Pool.Query(ctx, `SELECT day, people, bots, visitors FROM shortener_link_clicks_daily
		WHERE code = $1 AND day >= $2::date AND day < $3::date ORDER BY day`,
		st.Code, first.Format(time.DateOnly), end.Format(time.DateOnly))
	if err != nil {
		return fmt.Errorf("daily click stats: %w", err)
	}
	var d clicks.DailyClicks
	var visitors []byte
	var sketches [][]byte
	_, err = pgx.ForEachRow(rows, []any{&d.Day, &d.People, &d.Bots, &visitors}, func() error {
		d.Day = time.Date(d.Day.Year(), d.Day.Month(), d.Day.Day(), 0, 0, 0, 0, time.UTC)
		if visitors != nil {
			sketches = append(sketches, bytes.Clone(visitors))
			st.Visitors = append(st.Visitors, clicks.DayVisitors{Day: d.Day, Sketch: sketches[len(sketches)-1]})
		}
		if d.People+d.Bots == 0 {
			return nil
		}
		st.Daily = append(st.Daily, d)
		st.People += d.People
		st.Bots += d.Bots
		return nil
	})
	st.Uniques = clicks.MergeVisitors(sketches)
	if err != nil {
		return fmt.Errorf("daily click stats: %w", err)
	}
	return nil
}

// insertHourly adds the aggregate's hourly counters in one statement, in
// Code and hour order (the trigger of migration 003 adds them to the
// all-time totals).
func insertHourly(ctx context.Context, tx pgx.Tx, agg clicks.ClickAggregate) error {
	if len(agg.Hourly) == 0 {
		return nil
	}
	keys := agg.SortedHours()
	codes := make([]string, len(keys))
	hours := make([]time.Time, len(keys))
	people := make([]int64, len(keys))
	bots := make([]int64, len(keys))
	for i, k := range keys {
		codes[i], hours[i] = k.Code, time.Unix(k.Hour, 0).UTC()
		people[i], bots[i] = agg.Hourly[k][0], agg.Hourly[k][1]
	}
	if _, err := tx.Exec(ctx, `INSERT INTO shortener_link_clicks_hourly AS h (code, hour, people, bots)
		SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::bigint[])
		ON CONFLICT (code, hour) DO UPDATE SET people = h.people + excluded.people, bots = h.bots + excluded.bots`,
		codes, hours, people, bots); err != nil {
		return fmt.Errorf("counting clicks: %w", err)
	}
	return nil
}

// ClickTotal implements Sink: the all-time total, one row.
func (s *PostgresClickSink) ClickTotal(ctx context.Context, code string) (int64, error) {
	t, err := s.totals(ctx, code)
	return t.Total, err
}

func (s *PostgresClickSink) totals(ctx context.Context, code string) (clicks.Totals, error) {
	var t clicks.Totals
	err := s.Pool.QueryRow(ctx, `SELECT people, bots, imported FROM shortener_link_click_totals WHERE code = $1`, code).Scan(&t.People, &t.Bots, &t.Imported)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return t, fmt.Errorf("click total: %w", err)
	}
	t.Total = t.People + t.Bots + t.Imported
	return t, nil
}

var _ clicks.Sink = (*PostgresClickSink)(nil)

// pgDate formats a UTC day (unix seconds) as a date parameter.
func pgDate(day int64) string { return time.Unix(day, 0).UTC().Format(time.DateOnly) }

// VisitorSalt implements VisitorSalter on the table of
// migrations/013_visitor_salts.up.sql.
func (s *PostgresClickSink) VisitorSalt(ctx context.Context, day time.Time) ([]byte, error) {
	d := clicks.DayFloor(day).Format(time.DateOnly)
	if _, err := s.Pool.Exec(ctx, `DELETE FROM shortener_visitor_salts WHERE day < $1::date`, d); err != nil {
		return nil, fmt.Errorf("deleting old visitor salts: %w", err)
	}
	if _, err := s.Pool.Exec(ctx, `INSERT INTO shortener_visitor_salts (day, salt) VALUES ($1::date, $2)
		ON CONFLICT (day) DO NOTHING`, d, clicks.NewVisitorSalt()); err != nil {
		return nil, fmt.Errorf("creating the visitor salt: %w", err)
	}
	var salt []byte
	if err := s.Pool.QueryRow(ctx, `SELECT salt FROM shortener_visitor_salts WHERE day = $1::date`, d).Scan(&salt); err != nil {
		return nil, fmt.Errorf("reading the visitor salt: %w", err)
	}
	return salt, nil
}

// countVisitorsPG merges the batch's visitor hashes into each day's
// sketch in the click transaction: it first locks the days' rows (creating
// them empty), in (code, day) order after the hourly rows as the
// retention's roll-up does, so instances counting the same day take turns
// and never deadlock with it; then it writes the merged sketches.
func countVisitorsPG(ctx context.Context, tx pgx.Tx, agg clicks.ClickAggregate) error {
	days := agg.VisitorDays()
	if len(days) == 0 {
		return nil
	}
	codes, dates := make([]string, len(days)), make([]string, len(days))
	for i, d := range days {
		codes[i], dates[i] = d.Code, pgDate(d.Day)
	}
	rows, err := tx.Query(ctx, `INSERT INTO shortener_link_clicks_daily AS d (code, day)
		SELECT code, day FROM unnest($1::text[], $2::date[]) AS u(code, day) ORDER BY 1, 2
		ON CONFLICT (code, day) DO UPDATE SET people = d.people
		RETURNING code, day, visitors`, codes, dates)
	if err != nil {
		return fmt.Errorf("locking visitor days: %w", err)
	}
	stored := make(map[clicks.DayKey][]byte, len(days))
	var code string
	var day time.Time
	var b []byte
	if _, err := pgx.ForEachRow(rows, []any{&code, &day, &b}, func() error {
		stored[clicks.DayKey{Code: code, Day: day.Unix()}] = append([]byte(nil), b...)
		return nil
	}); err != nil {
		return fmt.Errorf("locking visitor days: %w", err)
	}
	sketches := make([][]byte, len(days))
	for i, d := range days {
		if sketches[i], err = clicks.AddVisitors(stored[d], agg.Visitors[d]); err != nil {
			return fmt.Errorf("counting visitors: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE shortener_link_clicks_daily AS d SET visitors = u.v
		FROM unnest($1::text[], $2::date[], $3::bytea[]) AS u(code, day, v)
		WHERE d.code = u.code AND d.day = u.day`, codes, dates, sketches); err != nil {
		return fmt.Errorf("counting visitors: %w", err)
	}
	return nil
}

var _ clicks.VisitorSalter = (*PostgresClickSink)(nil)
