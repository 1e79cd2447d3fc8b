// Package store holds the shortener's two link stores, PostgreSQL (with
// its migrations, applied under an advisory lock) and embedded (one bbolt
// file), each with its click sink (rollups, dimensions, visitor sketches,
// retention), idempotency records, imports and dashboard sessions. Both
// implement the contracts of package link and package clicks. It imports
// nothing of Caddy or zap.
package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// PostgresStore keeps links in PostgreSQL, in the tables of the
// connection's search_path. Several Caddy instances may share one database.
type PostgresStore struct {
	Pool *pgxpool.Pool
	// idemPruned is when expired idempotency records were last pruned
	// (Unix nanoseconds; postgres_idempotency.go).
	idemPruned atomic.Int64
	// SearchWalk, when set (by tests), replaces the steps of searchWalks
	// by two of this many links.
	SearchWalk int
	// Events: record every change of a link in the outbox
	// (shortener_events, link.EventLog) in the change's own statement or
	// transaction. Set before use, by a handler with webhooks.
	Events bool
	// MaxDomains bounds the link domains (link.DomainStore); 0 is
	// link.MaxDomains. Set before use (by tests, lower).
	MaxDomains int
}

// OpenPostgres applies the pending migrations and returns a store on pool.
// The pool stays the caller's: Close does not close it. The pool should set
// statement_timeout (internal/pgpool does); ctx bounds the migrations.
func OpenPostgres(ctx context.Context, pool *pgxpool.Pool) (*PostgresStore, error) {
	if pool == nil {
		return nil, errors.New("opening postgres store: nil pool")
	}
	if err := migrate(ctx, pool); err != nil {
		return nil, fmt.Errorf("opening postgres store: %w", err)
	}
	return &PostgresStore{Pool: pool}, nil
}

// Get implements Store.
func (s *PostgresStore) Get(ctx context.Context, code string) (link.Link, error) {
	l, err := scanLink(s.Pool.QueryRow(ctx, `SELECT `+linkColumns+` FROM shortener_links WHERE code = $1`, code), code)
	if err != nil && !errors.Is(err, link.ErrNotFound) {
		return link.Link{}, fmt.Errorf("getting link: %w", err)
	}
	return l, err
}

// linkColumns are the columns scanLink reads, in its order.
const linkColumns = `long_url, created_at, expires_at, revoked_at, title, tags, notes,
	redirect_status, valid_from, max_clicks, forward_query, clicks_served, version, custom,
	targeting, fallback_url`

// scanLink reads one row of linkColumns; no row is ErrNotFound.
func scanLink(row pgx.Row, code string) (link.Link, error) {
	l := link.Link{Code: code}
	var ls linkScan
	err := row.Scan(ls.into(&l)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return link.Link{}, link.ErrNotFound
	}
	if err != nil {
		return link.Link{}, err
	}
	ls.finish(&l)
	return l, nil
}

// linkScan holds the columns of linkColumns that need converting.
type linkScan struct {
	expires, revoked, validFrom *time.Time
	status                      int16
	targeting                   *string
}

// into is the Scan destinations of linkColumns for l.
func (ls *linkScan) into(l *link.Link) []any {
	return []any{&l.LongURL, &l.CreatedAt, &ls.expires, &ls.revoked, &l.Title, &l.Tags, &l.Notes,
		&ls.status, &ls.validFrom, &l.MaxClicks, &l.ForwardQuery, &l.ClicksServed, &l.Version, &l.Custom,
		&ls.targeting, &l.FallbackURL}
}

// finish converts what into read.
func (ls *linkScan) finish(l *link.Link) {
	l.CreatedAt = l.CreatedAt.UTC()
	l.ExpiresAt, l.RevokedAt, l.ValidFrom = utcOrZero(ls.expires), utcOrZero(ls.revoked), utcOrZero(ls.validFrom)
	l.RedirectStatus = int(ls.status)
	l.Tags = link.TagsOrNil(l.Tags)
	l.Targeting = targetingBytes(ls.targeting)
}

// targetingBytes is a targeting column's value as Link.Targeting holds it.
func targetingBytes(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// targetingText is Link.Targeting as its column holds it: NULL for none.
func targetingText(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// Create implements Store: one INSERT ... ON CONFLICT DO NOTHING, so a
// taken code (a 0-row insert) never raises and never overwrites. A zero
// CreatedAt is stored as now.
func (s *PostgresStore) Create(ctx context.Context, l link.Link) error {
	if err := CheckNewLink(l); err != nil {
		return err
	}
	if l.CreatedAt.IsZero() {
		l.CreatedAt = time.Now()
	}
	tags := l.Tags
	if tags == nil {
		tags = []string{} // NOT NULL: no tags is the empty array
	}
	rows, err := s.Pool.Query(ctx, "WITH "+changeCTE(
		`INSERT INTO shortener_links (code, long_url, created_at, expires_at, revoked_at, title, tags, notes,
		                              redirect_status, valid_from, max_clicks, forward_query, clicks_served, custom,
		                              targeting, fallback_url)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
		 ON CONFLICT (code) DO NOTHING`, link.EventCreated, "", s.Events)+" SELECT code FROM ch",
		l.Code, l.LongURL, l.CreatedAt, nullTime(l.ExpiresAt), nullTime(l.RevokedAt), l.Title, tags, l.Notes,
		int16(l.RedirectStatus), nullTime(l.ValidFrom), l.MaxClicks, l.ForwardQuery, l.ClicksServed, l.Custom,
		targetingText(l.Targeting), l.FallbackURL)
	var created []string
	if err == nil {
		created, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
			return link.ErrCodeTaken
		}
		return fmt.Errorf("creating link: %w", err)
	}
	if len(created) == 0 {
		return link.ErrCodeTaken
	}
	return nil
}

// Revoke implements Store; the first revocation sets the time and raises
// the version, a later one changes nothing.
func (s *PostgresStore) Revoke(ctx context.Context, code string, at time.Time) error {
	if at.IsZero() {
		return errors.New("revoking link: zero time")
	}
	// Only the first revocation writes (and records an event); exists
	// tells a link already revoked from none.
	var exists bool
	err := s.Pool.QueryRow(ctx,
		"WITH "+changeCTE(
			`UPDATE shortener_links SET revoked_at = $2, version = version + 1 WHERE code = $1 AND revoked_at IS NULL`,
			link.EventRevoked, "", s.Events)+
			` SELECT EXISTS (SELECT 1 FROM ch) OR EXISTS (SELECT 1 FROM shortener_links WHERE code = $1)`,
		code, at).Scan(&exists)
	if err != nil {
		return fmt.Errorf("revoking link: %w", err)
	}
	if !exists {
		return link.ErrNotFound
	}
	return nil
}

// NextBlock implements Store.
//
// IDs come from a one-row counter, advanced by one autocommitted
// UPDATE ... RETURNING: the row lock makes concurrent callers on any number
// of instances take turns, each block is exactly [first, first+size) for
// whatever size that caller asks, and a failed statement reserves nothing.
// A sequence would not do: nextval hands out one INCREMENT BY step, fixed
// for every caller, so instances configured with different block sizes
// would reserve overlapping ranges, and calling nextval size times gives
// interleaved, non-consecutive IDs. The counter costs a row lock held for
// one statement per block (1000 codes by default), far below any contention.
func (s *PostgresStore) NextBlock(ctx context.Context, size int64) (int64, error) {
	if size < 1 {
		return 0, fmt.Errorf("reserving IDs: block size %d, want at least 1", size)
	}
	var first int64
	err := s.Pool.QueryRow(ctx,
		`UPDATE shortener_id_blocks SET next_id = next_id + $1 RETURNING next_id - $1`,
		size).Scan(&first)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errors.New("reserving IDs: the shortener_id_blocks row is missing")
	}
	if err != nil {
		return 0, fmt.Errorf("reserving IDs: %w", err)
	}
	return first, nil
}

// ScanCodes implements CodeLister: a range scan of the primary key.
func (s *PostgresStore) ScanCodes(ctx context.Context, after string, limit int) ([]string, error) {
	rows, err := s.Pool.Query(ctx,
		`SELECT code FROM shortener_links WHERE code > $1 ORDER BY code LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("listing codes: %w", err)
	}
	codes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing codes: %w", err)
	}
	return codes, nil
}

// CodesSince implements CodeLister: a range scan of the seq index
// (migration 004); seq comes from a sequence, so a row inserted by any
// writer gets one.
func (s *PostgresStore) CodesSince(ctx context.Context, after int64, limit int) ([]link.SeqCode, error) {
	rows, err := s.Pool.Query(ctx,
		`SELECT seq, code FROM shortener_links WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("listing new codes: %w", err)
	}
	codes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (link.SeqCode, error) {
		var c link.SeqCode
		err := row.Scan(&c.Seq, &c.Code)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing new codes: %w", err)
	}
	return codes, nil
}

// LastSeq implements CodeLister (one probe of the seq index).
func (s *PostgresStore) LastSeq(ctx context.Context) (int64, error) {
	var last int64
	if err := s.Pool.QueryRow(ctx, `SELECT COALESCE(max(seq), 0) FROM shortener_links`).Scan(&last); err != nil {
		return 0, fmt.Errorf("reading the last sequence number: %w", err)
	}
	return last, nil
}

// TakeServe implements link.ServeCounter in one autocommitted statement. The
// UPDATE takes the row lock, so concurrent callers on every instance take
// turns, and under READ COMMITTED each re-checks clicks_served <
// max_clicks on the row as the previous one left it: no more than
// max_clicks are ever counted. The outer SELECT tells an exhausted link
// from one without max_clicks.
func (s *PostgresStore) TakeServe(ctx context.Context, code string) (int64, bool, error) {
	var left *int64
	var maxClicks int64
	err := s.Pool.QueryRow(ctx,
		"WITH "+changeCTE(`UPDATE shortener_links SET clicks_served = clicks_served + 1
		     WHERE code = $1 AND clicks_served < max_clicks`, link.EventMaxClicks, "clicks_served = max_clicks", s.Events)+
			` SELECT (SELECT max_clicks - clicks_served FROM ch), max_clicks FROM shortener_links WHERE code = $1`,
		code).Scan(&left, &maxClicks)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, link.ErrNotFound
	case err != nil:
		return 0, false, fmt.Errorf("counting a served redirect: %w", err)
	case left != nil:
		return *left, true, nil
	case maxClicks == 0:
		return -1, true, nil
	}
	return 0, false, nil
}

// Close implements Store. The pool belongs to the caller and stays open.
func (s *PostgresStore) Close() error { return nil }

// utcOrZero maps SQL NULL to the zero time.
func utcOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// nullTime maps the zero time to SQL NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

var (
	_ link.Store        = (*PostgresStore)(nil)
	_ link.CodeLister   = (*PostgresStore)(nil)
	_ link.ServeCounter = (*PostgresStore)(nil)
)
