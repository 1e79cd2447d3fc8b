package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// changeCTE makes stmt, an INSERT or UPDATE of shortener_links without a
// RETURNING clause, the common table expression "ch" of the rows it
// writes and, when on, records an event of type typ for each of them
// (those for which the SQL condition when holds, if given) in the same
// statement: the link's change and its event are one atomic write. The
// caller writes "WITH " + changeCTE(...) + " SELECT ... FROM ch". typ
// and when are this package's constants, never client input.
func changeCTE(stmt, typ, when string, on bool) string {
	cte := "ch AS (" + stmt + " RETURNING *)"
	if on {
		cte += ", ev AS (INSERT INTO shortener_events (type, code, data) SELECT '" + typ + "', code, to_jsonb(ch) FROM ch"
		if when != "" {
			cte += " WHERE " + when
		}
		cte += ")"
	}
	return cte
}

// insertClickEvents records a click event for every click of the
// batches in tx, the transaction that counts them.
func insertClickEvents(ctx context.Context, tx pgx.Tx, batches []clicks.Batch) error {
	var codes []string
	var ats []time.Time
	var data []string // JSON texts: pgx sends them as jsonb[]
	var buf []byte
	for _, b := range batches {
		for _, c := range b.Clicks {
			buf = clicks.NewClickEvent(c).AppendJSON(buf[:0])
			codes, ats, data = append(codes, c.Code), append(ats, c.At), append(data, string(buf))
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO shortener_events (type, at, code, data)
		SELECT $1, at, code, data FROM unnest($2::text[], $3::timestamptz[], $4::jsonb[]) AS u (code, at, data)`,
		clicks.EventType, codes, ats, data); err != nil {
		return fmt.Errorf("recording click events: %w", err)
	}
	return nil
}

// RecordEvents implements link.EventRecorder: the events, in one
// statement.
func (s *PostgresStore) RecordEvents(ctx context.Context, events []link.Event) error {
	if err := checkRecorded(ctx, events); err != nil {
		return err
	}
	ids, types, ats, data := make([]string, len(events)), make([]string, len(events)), make([]time.Time, len(events)), make([]string, len(events))
	for i, e := range events {
		ids[i], types[i], ats[i], data[i] = e.ID, e.Type, e.At, string(e.Data)
	}
	if _, err := s.Pool.Exec(ctx, `INSERT INTO shortener_events (id, type, at, code, data)
		SELECT id, type, at, '', data FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::jsonb[]) AS u (id, type, at, data)`,
		ids, types, ats, data); err != nil {
		return fmt.Errorf("recording events: %w", err)
	}
	return nil
}

// pgEventRow is a link's row as to_jsonb writes it in an event's data.
type pgEventRow struct {
	Code           string     `json:"code"`
	LongURL        string     `json:"long_url"`
	CreatedAt      time.Time  `json:"created_at"`
	ExpiresAt      *time.Time `json:"expires_at"`
	RevokedAt      *time.Time `json:"revoked_at"`
	Title          string     `json:"title"`
	Tags           []string   `json:"tags"`
	Notes          string     `json:"notes"`
	RedirectStatus int        `json:"redirect_status"`
	ValidFrom      *time.Time `json:"valid_from"`
	MaxClicks      int64      `json:"max_clicks"`
	ForwardQuery   *bool      `json:"forward_query"`
	ClicksServed   int64      `json:"clicks_served"`
	Version        int64      `json:"version"`
	Custom         bool       `json:"custom"`
	Targeting      *string    `json:"targeting"`
	FallbackURL    string     `json:"fallback_url"`
}

func (r pgEventRow) link() link.Link {
	l := link.Link{Code: r.Code, LongURL: r.LongURL, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: utcOrZero(r.ExpiresAt),
		RevokedAt: utcOrZero(r.RevokedAt), Title: r.Title, Tags: r.Tags, Notes: r.Notes, RedirectStatus: r.RedirectStatus,
		ValidFrom: utcOrZero(r.ValidFrom), MaxClicks: r.MaxClicks, ForwardQuery: r.ForwardQuery,
		ClicksServed: r.ClicksServed, Version: r.Version, Custom: r.Custom, FallbackURL: r.FallbackURL}
	if len(l.Tags) == 0 {
		l.Tags = nil
	}
	if r.Targeting != nil {
		l.Targeting = []byte(*r.Targeting)
	}
	return l
}

// EventsAfter implements link.EventLog: events whose transaction is older
// than every one still running, in (tx, seq) order.
func (s *PostgresStore) EventsAfter(ctx context.Context, after link.EventCursor, limit int) ([]link.Event, link.EventCursor, error) {
	limit = min(max(limit, 1), maxEventPage)
	rows, err := s.Pool.Query(ctx,
		`SELECT tx::text::bigint, seq, id, type, at, code, data FROM shortener_events
		 WHERE (tx, seq) > ($1::text::xid8, $2) AND tx < pg_snapshot_xmin(pg_current_snapshot())
		 ORDER BY tx, seq LIMIT $3`, fmt.Sprint(after.Tx), after.Seq, limit)
	if err != nil {
		return nil, after, fmt.Errorf("reading link events: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (link.Event, error) {
		var e link.Event
		var data []byte
		if err := row.Scan(&e.Cursor.Tx, &e.Cursor.Seq, &e.ID, &e.Type, &e.At, &e.Code, &data); err != nil {
			return e, err
		}
		e.At = e.At.UTC()
		if !strings.HasPrefix(e.Type, linkEventPrefix) {
			e.Data = data
			return e, nil
		}
		var r pgEventRow
		if err := json.Unmarshal(data, &r); err != nil {
			return e, fmt.Errorf("event %s: %w", e.ID, err)
		}
		e.Link = r.link()
		return e, nil
	})
	if err != nil {
		return nil, after, fmt.Errorf("reading link events: %w", err)
	}
	if len(events) > 0 {
		after = events[len(events)-1].Cursor
	}
	return events, after, nil
}

// EventsEnd implements link.EventLog: the last event EventsAfter can read
// now.
func (s *PostgresStore) EventsEnd(ctx context.Context) (link.EventCursor, error) {
	var c link.EventCursor
	err := s.Pool.QueryRow(ctx, `SELECT tx::text::bigint, seq FROM shortener_events
		WHERE tx < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY tx DESC, seq DESC LIMIT 1`).Scan(&c.Tx, &c.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return link.EventCursor{}, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading link events: %w", err)
	}
	return c, nil
}

// maxEventPage bounds one EventsAfter.
const maxEventPage = 1000

// linkEventPrefix starts the types of link events, whose data is the
// link's row.
const linkEventPrefix = "link."

var (
	_ link.EventLog      = (*PostgresStore)(nil)
	_ link.EventRecorder = (*PostgresStore)(nil)
)
