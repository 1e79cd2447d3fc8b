package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// reuseLockClass is the first key of the advisory locks Reusable takes (the
// bytes "edkr"), the second is one of reuseLockBuckets buckets of the long
// URL's hash: a transaction takes at most that many locks, in ascending
// order (so two never wait for each other in a cycle), and a collision only
// makes two unrelated reuse creates take turns.
const (
	reuseLockClass   int32 = 0x65646b72
	reuseLockBuckets int32 = 256
)

// CreateTx implements TxStore: one transaction that, with a claim, first
// inserts the claim's row (a concurrent holder of the same key makes the
// INSERT wait on the primary key until it commits or rolls back).
func (s *PostgresStore) CreateTx(ctx context.Context, claim *link.IdemClaim, now time.Time,
	fn func(context.Context, link.LinkTx) (link.IdemAnswer, error)) (link.IdemAnswer, bool, error) {
	if claim != nil {
		s.pruneIdem(ctx, now)
	}
	tx, err := s.Pool.Begin(ctx)
	if err != nil {
		return link.IdemAnswer{}, false, fmt.Errorf("beginning create: %w", err)
	}
	defer tx.Rollback(ctx)
	if claim != nil {
		ans, done, err := claimIdem(ctx, tx, claim, now)
		if err != nil || done {
			return ans, done, err
		}
	}
	ans, err := fn(ctx, pgLinkTx{tx, s.Events})
	if err != nil || ans.Status >= 500 {
		return ans, false, err
	}
	if claim != nil {
		if _, err := tx.Exec(ctx,
			`UPDATE shortener_idempotency SET status = $3, body = $4 WHERE scope = $1 AND key = $2`,
			claim.Scope, claim.Key, ans.Status, ans.Body); err != nil {
			return link.IdemAnswer{}, false, fmt.Errorf("recording idempotent answer: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return link.IdemAnswer{}, false, fmt.Errorf("committing create: %w", err)
	}
	return ans, false, nil
}

// claimIdem takes the claim's row, replacing an expired one. When a live
// row exists, done is true and ans its answer (or ErrIdemMismatch).
func claimIdem(ctx context.Context, tx pgx.Tx, c *link.IdemClaim, now time.Time) (ans link.IdemAnswer, done bool, err error) {
	var mine bool
	err = tx.QueryRow(ctx, `INSERT INTO shortener_idempotency AS i (scope, key, body_sha256, status, body, created_at)
		VALUES ($1, $2, $3, 0, '', $4)
		ON CONFLICT (scope, key) DO UPDATE
		SET body_sha256 = EXCLUDED.body_sha256, status = 0, body = '', created_at = EXCLUDED.created_at
		WHERE i.created_at <= $5
		RETURNING true`, c.Scope, c.Key, c.BodySHA256[:], now, now.Add(-link.IdemTTL)).Scan(&mine)
	if err == nil {
		return link.IdemAnswer{}, false, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return link.IdemAnswer{}, false, fmt.Errorf("claiming idempotency key: %w", err)
	}
	// A live row, committed (the INSERT waited for its writer) and locked
	// by this transaction until it ends.
	var digest []byte
	if err := tx.QueryRow(ctx, `SELECT body_sha256, status, body FROM shortener_idempotency WHERE scope = $1 AND key = $2`,
		c.Scope, c.Key).Scan(&digest, &ans.Status, &ans.Body); err != nil {
		return link.IdemAnswer{}, false, fmt.Errorf("reading idempotency record: %w", err)
	}
	if !slices.Equal(digest, c.BodySHA256[:]) {
		return link.IdemAnswer{}, false, link.ErrIdemMismatch
	}
	return ans, true, nil
}

// IdemLookup implements TxStore.
func (s *PostgresStore) IdemLookup(ctx context.Context, scope, key string, now time.Time) (digest [32]byte, ans link.IdemAnswer, found bool, err error) {
	var d []byte
	err = s.Pool.QueryRow(ctx, `SELECT body_sha256, status, body FROM shortener_idempotency
		WHERE scope = $1 AND key = $2 AND created_at > $3 AND status > 0`,
		scope, key, now.Add(-link.IdemTTL)).Scan(&d, &ans.Status, &ans.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return digest, link.IdemAnswer{}, false, nil
	}
	if err != nil {
		return digest, link.IdemAnswer{}, false, fmt.Errorf("reading idempotency record: %w", err)
	}
	copy(digest[:], d)
	return digest, ans, true, nil
}

// pruneIdem deletes up to IdemPruneBatch expired records, at most once per
// IdemPruneEvery; a failure is left to the next turn.
func (s *PostgresStore) pruneIdem(ctx context.Context, now time.Time) {
	last := s.idemPruned.Load()
	if now.UnixNano()-last < int64(link.IdemPruneEvery) || !s.idemPruned.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	_, _ = s.Pool.Exec(ctx, `DELETE FROM shortener_idempotency WHERE (scope, key) IN (
		SELECT scope, key FROM shortener_idempotency WHERE created_at <= $1 LIMIT $2)`,
		now.Add(-link.IdemTTL), link.IdemPruneBatch)
}

// pgLinkTx is LinkTx on a PostgreSQL transaction.
type pgLinkTx struct {
	tx     pgx.Tx
	events bool // record link.created events (PostgresStore.Events)
}

// Insert implements LinkTx: one multi-row INSERT ... ON CONFLICT DO NOTHING
// RETURNING code, its rows in code order so that two transactions inserting
// the same codes lock them in the same order.
func (t pgLinkTx) Insert(ctx context.Context, links []link.Link) ([]bool, error) {
	stored := make([]bool, len(links))
	if len(links) == 0 {
		return stored, nil
	}
	order := make([]int, len(links))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(links[a].Code, links[b].Code) })
	const cols = 16
	var q strings.Builder
	q.WriteString(`INSERT INTO shortener_links (code, long_url, created_at, expires_at, revoked_at, title, tags, notes, custom,
		redirect_status, valid_from, max_clicks, forward_query, clicks_served, targeting, fallback_url) VALUES `)
	args := make([]any, 0, cols*len(links))
	for n, i := range order {
		l := links[i]
		if l.CreatedAt.IsZero() {
			l.CreatedAt = time.Now()
		}
		if err := CheckNewLink(l); err != nil {
			return nil, err
		}
		if n > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(")
		for c := range cols {
			if c > 0 {
				q.WriteString(", ")
			}
			fmt.Fprintf(&q, "$%d", n*cols+c+1)
		}
		q.WriteString(")")
		tags := l.Tags
		if tags == nil {
			tags = []string{}
		}
		args = append(args, l.Code, l.LongURL, l.CreatedAt, nullTime(l.ExpiresAt), nullTime(l.RevokedAt), l.Title, tags, l.Notes, l.Custom,
			int16(l.RedirectStatus), nullTime(l.ValidFrom), l.MaxClicks, l.ForwardQuery, l.ClicksServed,
			targetingText(l.Targeting), l.FallbackURL)
	}
	q.WriteString(` ON CONFLICT (code) DO NOTHING`)
	rows, err := t.tx.Query(ctx, "WITH "+changeCTE(q.String(), link.EventCreated, "", t.events)+" SELECT code FROM ch", args...)
	if err != nil {
		return nil, fmt.Errorf("creating links: %w", err)
	}
	codes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("creating links: %w", err)
	}
	got := make(map[string]bool, len(codes))
	for _, c := range codes {
		got[c] = true
	}
	for _, i := range order { // the first of equal codes is the one inserted
		if got[links[i].Code] {
			stored[i], got[links[i].Code] = true, false
		}
	}
	return stored, nil
}

// Reusable implements LinkTx: the advisory locks of the URLs' buckets in
// ascending order, then one query for every link's oldest candidate (by
// the reuse index of long URLs).
func (t pgLinkTx) Reusable(ctx context.Context, links []link.Link, now time.Time) ([]link.Link, error) {
	out := make([]link.Link, len(links))
	if len(links) == 0 {
		return out, nil
	}
	buckets := make([]int32, 0, len(links))
	var k reuseKeys
	for _, l := range links {
		buckets = append(buckets, reuseBucket(l.LongURL))
		k.add(l)
	}
	slices.Sort(buckets)
	buckets = slices.Compact(buckets)
	if _, err := t.tx.Exec(ctx, `SELECT count(pg_advisory_xact_lock($1, b)) FROM unnest($2::int4[]) AS b`,
		reuseLockClass, buckets); err != nil {
		return nil, fmt.Errorf("locking reuse candidates: %w", err)
	}
	rows, err := t.tx.Query(ctx, `SELECT q.i, c.*
		FROM unnest($1::text[], $2::timestamptz[], $4::int2[], $5::timestamptz[], $6::int8[], $7::bool[],
		            $8::text[], $9::text[])
		     WITH ORDINALITY AS q(u, e, s, v, m, f, t, fb, i)
		CROSS JOIN LATERAL (
			SELECT code, `+linkColumns+` FROM shortener_links
			WHERE long_url = q.u AND NOT custom AND revoked_at IS NULL
			  AND expires_at IS NOT DISTINCT FROM q.e AND (expires_at IS NULL OR expires_at > $3)
			  AND redirect_status = q.s AND valid_from IS NOT DISTINCT FROM q.v
			  AND max_clicks = q.m AND forward_query IS NOT DISTINCT FROM q.f
			  AND targeting IS NOT DISTINCT FROM q.t AND fallback_url = q.fb
			  AND (max_clicks = 0 OR clicks_served < max_clicks)
			ORDER BY created_at, code LIMIT 1) c`,
		k.urls, k.expiries, now, k.statuses, k.validFroms, k.maxClicks, k.forwards, k.targetings, k.fallbacks)
	if err != nil {
		return nil, fmt.Errorf("finding reuse candidates: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var l link.Link
		var ls linkScan
		if err := rows.Scan(append([]any{&i, &l.Code}, ls.into(&l)...)...); err != nil {
			return nil, fmt.Errorf("finding reuse candidates: %w", err)
		}
		ls.finish(&l)
		out[i-1] = l
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("finding reuse candidates: %w", err)
	}
	return out, nil
}

// reuseKeys are the columns reuse compares, one array per column with an
// element per link, for unnest.
type reuseKeys struct {
	urls                 []string
	expiries, validFroms []*time.Time
	statuses             []int16
	maxClicks            []int64
	forwards             []*bool
	targetings           []*string
	fallbacks            []string
}

func (k *reuseKeys) add(l link.Link) {
	k.urls = append(k.urls, l.LongURL)
	k.expiries = append(k.expiries, timeOrNil(l.ExpiresAt))
	k.validFroms = append(k.validFroms, timeOrNil(l.ValidFrom))
	k.statuses = append(k.statuses, int16(l.RedirectStatus))
	k.maxClicks = append(k.maxClicks, l.MaxClicks)
	k.forwards = append(k.forwards, l.ForwardQuery)
	k.targetings = append(k.targetings, targetingText(l.Targeting))
	k.fallbacks = append(k.fallbacks, l.FallbackURL)
}

// timeOrNil is nil for the zero time.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// reuseBucket is the advisory lock bucket of a long URL.
func reuseBucket(longURL string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(longURL))
	return int32(h.Sum32() % uint32(reuseLockBuckets))
}

var _ link.TxStore = (*PostgresStore)(nil)
