package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// ClickRows implements clicks.RowReader: the hourly rows of the codes, then
// their daily rows as the 00:00 hour of the day, in two scans of the
// primary keys.
func (s *PostgresClickSink) ClickRows(ctx context.Context, codes []string) (map[string][]link.HourlyClicks, error) {
	rows, err := s.Pool.Query(ctx, `SELECT code, hour, people, bots FROM shortener_link_clicks_hourly
		WHERE code = ANY($1::text[]) AND people + bots > 0
		UNION ALL
		SELECT code, (day::timestamp AT TIME ZONE 'UTC'), people, bots FROM shortener_link_clicks_daily
		WHERE code = ANY($1::text[]) AND people + bots > 0`, codes)
	if err != nil {
		return nil, fmt.Errorf("reading click rollups: %w", err)
	}
	out := map[string][]link.HourlyClicks{}
	var code string
	var h link.HourlyClicks
	_, err = pgx.ForEachRow(rows, []any{&code, &h.Hour, &h.People, &h.Bots}, func() error {
		h.Hour = h.Hour.UTC()
		out[code] = append(out[code], h)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading click rollups: %w", err)
	}
	return mergeHours(out), nil
}

// mergeHours sorts each code's rows by hour and sums rows of one hour (a
// day's row and its 00:00 hour).
func mergeHours(byCode map[string][]link.HourlyClicks) map[string][]link.HourlyClicks {
	for code, rows := range byCode {
		at := map[time.Time]int{}
		var out []link.HourlyClicks
		for _, r := range rows {
			if i, ok := at[r.Hour]; ok {
				out[i].People, out[i].Bots = out[i].People+r.People, out[i].Bots+r.Bots
				continue
			}
			at[r.Hour] = len(out)
			out = append(out, r)
		}
		byCode[code] = sortedHours(out)
	}
	return byCode
}

var _ clicks.RowReader = (*PostgresClickSink)(nil)
