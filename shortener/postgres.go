package shortener

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresStore keeps links in PostgreSQL, in the tables of the
// connection's search_path. Several Caddy instances may share one database.
type PostgresStore struct {
	pool *pgxpool.Pool
	// idemPruned is when expired idempotency records were last pruned
	// (Unix nanoseconds; postgres_idempotency.go).
	idemPruned atomic.Int64
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
	return &PostgresStore{pool: pool}, nil
}

// Get implements Store.
func (s *PostgresStore) Get(ctx context.Context, code string) (Link, error) {
	l := Link{Code: code}
	var expires, revoked *time.Time
	err := s.pool.QueryRow(ctx,
		`SELECT long_url, created_at, expires_at, revoked_at, title, tags, notes, custom FROM shortener_links WHERE code = $1`,
		code).Scan(&l.LongURL, &l.CreatedAt, &expires, &revoked, &l.Title, &l.Tags, &l.Notes, &l.Custom)
	if errors.Is(err, pgx.ErrNoRows) {
		return Link{}, ErrNotFound
	}
	if err != nil {
		return Link{}, fmt.Errorf("getting link: %w", err)
	}
	l.CreatedAt = l.CreatedAt.UTC()
	if expires != nil {
		l.ExpiresAt = expires.UTC()
	}
	if revoked != nil {
		l.RevokedAt = revoked.UTC()
	}
	l.Tags = tagsOrNil(l.Tags)
	return l, nil
}

// Create implements Store: one INSERT ... ON CONFLICT DO NOTHING, so a
// taken code (a 0-row insert) never raises and never overwrites. A zero
// CreatedAt is stored as now.
func (s *PostgresStore) Create(ctx context.Context, l Link) error {
	if err := checkNewLink(l); err != nil {
		return err
	}
	if l.CreatedAt.IsZero() {
		l.CreatedAt = time.Now()
	}
	tags := l.Tags
	if tags == nil {
		tags = []string{} // NOT NULL: no tags is the empty array
	}
	tag, err := s.pool.Exec(ctx,
		`INSERT INTO shortener_links (code, long_url, created_at, expires_at, revoked_at, title, tags, notes, custom)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		 ON CONFLICT (code) DO NOTHING`,
		l.Code, l.LongURL, l.CreatedAt, nullTime(l.ExpiresAt), nullTime(l.RevokedAt), l.Title, tags, l.Notes, l.Custom)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
			return ErrCodeTaken
		}
		return fmt.Errorf("creating link: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrCodeTaken
	}
	return nil
}

// Revoke implements Store; COALESCE keeps the first revocation time.
func (s *PostgresStore) Revoke(ctx context.Context, code string, at time.Time) error {
	if at.IsZero() {
		return errors.New("revoking link: zero time")
	}
	tag, err := s.pool.Exec(ctx,
		`UPDATE shortener_links SET revoked_at = COALESCE(revoked_at, $2) WHERE code = $1`,
		code, at)
	if err != nil {
		return fmt.Errorf("revoking link: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
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
	err := s.pool.QueryRow(ctx,
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
	rows, err := s.pool.Query(ctx,
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
func (s *PostgresStore) CodesSince(ctx context.Context, after int64, limit int) ([]SeqCode, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT seq, code FROM shortener_links WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("listing new codes: %w", err)
	}
	codes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SeqCode, error) {
		var c SeqCode
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
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(max(seq), 0) FROM shortener_links`).Scan(&last); err != nil {
		return 0, fmt.Errorf("reading the last sequence number: %w", err)
	}
	return last, nil
}

// Close implements Store. The pool belongs to the caller and stays open.
func (s *PostgresStore) Close() error { return nil }

// nullTime maps the zero time to SQL NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

var (
	_ Store      = (*PostgresStore)(nil)
	_ CodeLister = (*PostgresStore)(nil)
)
