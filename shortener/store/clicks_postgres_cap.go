package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// pgCapped writes capped counters (clicks_cap.go) to a table of values
// and a table of named values per slot. Each statement takes arrays: the
// Slot's columns (slotArgs) or the key's (keyArgs), then for write and
// bump one more array of counts.
type pgCapped[K clicks.CappedKey[K, S], S clicks.CappedSlot[S]] struct {
	what string // for errors: "referrer", "dimension"
	// lock inserts or locks the slots, returning their columns and count
	// of named values; stored returns the keys of the arrays that have a
	// row; write adds counts to rows; bump adds to the named values.
	lock, stored, write, bump string
	slotArgs                  func([]S) []any
	keyArgs                   func([]K) []any
	scanSlot                  func(pgx.CollectableRow) (S, int64, error)
	scanKey                   func(pgx.CollectableRow) (K, error)
}

// count adds the increments within the cap of limit named values per
// Slot. It first locks each slot's count (creating it at 0), in the
// slots' fixed order: a transaction counting the same slot on another
// instance waits there until this one commits. Then, in a new statement
// and so a new snapshot (read committed), it reads which of the keys are
// stored: under the lock, this and the count are exact, and the values
// added past the cap go to the slot's OtherReferrer row. It returns the
// increments written, by row (clicks.CapValues).
func (c pgCapped[K, S]) count(ctx context.Context, tx pgx.Tx, incs map[K]int64, limit int) (map[K]int64, error) {
	if len(incs) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, c.lock, c.slotArgs(clicks.CapSlots(incs))...)
	if err != nil {
		return nil, fmt.Errorf("locking %s days: %w", c.what, err)
	}
	used := make(map[S]int64)
	if _, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) {
		s, n, err := c.scanSlot(r)
		used[s] = n
		return struct{}{}, err
	}); err != nil {
		return nil, fmt.Errorf("locking %s days: %w", c.what, err)
	}
	asked := make([]K, 0, len(incs))
	for k := range incs {
		asked = append(asked, k)
	}
	rows, err = tx.Query(ctx, c.stored, c.keyArgs(asked)...)
	if err != nil {
		return nil, fmt.Errorf("reading %ss: %w", c.what, err)
	}
	have, err := pgx.CollectRows(rows, c.scanKey)
	if err != nil {
		return nil, fmt.Errorf("reading %ss: %w", c.what, err)
	}
	stored := make(map[K]bool, len(have))
	for _, k := range have {
		stored[k] = true
	}
	writes, added := clicks.CapValues(incs, func(k K) bool { return stored[k] }, used, limit)
	keys := clicks.SortedCapKeys(writes)
	counts := make([]int64, len(keys))
	for i, k := range keys {
		counts[i] = writes[k]
	}
	if _, err := tx.Exec(ctx, c.write, append(c.keyArgs(keys), counts)...); err != nil {
		return nil, fmt.Errorf("counting %ss: %w", c.what, err)
	}
	if len(added) == 0 {
		return writes, nil
	}
	var slots []S
	var more []int64
	for _, s := range clicks.CapSlots(incs) {
		if a := added[s]; a > 0 {
			slots, more = append(slots, s), append(more, a)
		}
	}
	if _, err := tx.Exec(ctx, c.bump, append(c.slotArgs(slots), more)...); err != nil {
		return nil, fmt.Errorf("counting %s values: %w", c.what, err)
	}
	return writes, nil
}

// pgReferrers are the referrer hosts of 002_clicks.up.sql, capped per
// link-day in shortener_link_referrer_days (003_click_bounds.up.sql).
var pgReferrers = pgCapped[clicks.RefKey, clicks.DayKey]{
	what: "referrer",
	lock: `INSERT INTO shortener_link_referrer_days AS d (code, day, hosts)
		SELECT code, day, 0 FROM unnest($1::text[], $2::date[]) AS u(code, day)
		ON CONFLICT (code, day) DO UPDATE SET hosts = d.hosts
		RETURNING code, day, hosts`,
	stored: `SELECT r.code, r.day, r.host FROM shortener_link_referrers_daily r
		JOIN unnest($1::text[], $2::date[], $3::text[]) AS u(code, day, host)
		ON r.code = u.code AND r.day = u.day AND r.host = u.host`,
	write: `INSERT INTO shortener_link_referrers_daily AS r (code, day, host, count)
		SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::bigint[])
		ON CONFLICT (code, day, host) DO UPDATE SET count = r.count + excluded.count`,
	bump: `UPDATE shortener_link_referrer_days AS d SET hosts = d.hosts + u.added
		FROM unnest($1::text[], $2::date[], $3::bigint[]) AS u(code, day, added)
		WHERE d.code = u.code AND d.day = u.day`,
	slotArgs: func(days []clicks.DayKey) []any {
		codes, dates := make([]string, len(days)), make([]string, len(days))
		for i, d := range days {
			codes[i], dates[i] = d.Code, pgDate(d.Day)
		}
		return []any{codes, dates}
	},
	keyArgs: func(keys []clicks.RefKey) []any {
		codes, dates, hosts := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
		for i, k := range keys {
			codes[i], dates[i], hosts[i] = k.Code, pgDate(k.Day), k.Host
		}
		return []any{codes, dates, hosts}
	},
	scanSlot: func(r pgx.CollectableRow) (d clicks.DayKey, n int64, err error) {
		var day time.Time
		err = r.Scan(&d.Code, &day, &n)
		d.Day = day.Unix()
		return d, n, err
	},
	scanKey: func(r pgx.CollectableRow) (k clicks.RefKey, err error) {
		var day time.Time
		err = r.Scan(&k.Code, &day, &k.Host)
		k.Day = day.Unix()
		return k, err
	},
}

// pgDims are the dimension values of 014_clicks_dims.up.sql, capped per
// link, day and dimension in shortener_link_dim_days.
var pgDims = pgCapped[clicks.DimKey, clicks.DimDay]{
	what: "dimension",
	lock: `INSERT INTO shortener_link_dim_days AS d (code, day, dim, "values")
		SELECT code, day, dim, 0 FROM unnest($1::text[], $2::date[], $3::text[]) AS u(code, day, dim)
		ON CONFLICT (code, day, dim) DO UPDATE SET "values" = d."values"
		RETURNING code, day, dim, "values"`,
	stored: `SELECT r.code, r.day, r.dim, r.value FROM shortener_link_dims_daily r
		JOIN unnest($1::text[], $2::date[], $3::text[], $4::text[]) AS u(code, day, dim, value)
		ON r.code = u.code AND r.dim = u.dim AND r.day = u.day AND r.value = u.value`,
	write: `INSERT INTO shortener_link_dims_daily AS r (code, day, dim, value, count)
		SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::text[], $5::bigint[])
		ON CONFLICT (code, dim, day, value) DO UPDATE SET count = r.count + excluded.count`,
	bump: `UPDATE shortener_link_dim_days AS d SET "values" = d."values" + u.added
		FROM unnest($1::text[], $2::date[], $3::text[], $4::bigint[]) AS u(code, day, dim, added)
		WHERE d.code = u.code AND d.day = u.day AND d.dim = u.dim`,
	slotArgs: func(slots []clicks.DimDay) []any {
		codes, dates, dims := make([]string, len(slots)), make([]string, len(slots)), make([]string, len(slots))
		for i, s := range slots {
			codes[i], dates[i], dims[i] = s.Code, pgDate(s.Day), s.Dim
		}
		return []any{codes, dates, dims}
	},
	keyArgs: func(keys []clicks.DimKey) []any {
		n := len(keys)
		codes, dates, dims, vals := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		for i, k := range keys {
			codes[i], dates[i], dims[i], vals[i] = k.Code, pgDate(k.Day), k.Dim, k.Val
		}
		return []any{codes, dates, dims, vals}
	},
	scanSlot: func(r pgx.CollectableRow) (s clicks.DimDay, n int64, err error) {
		var day time.Time
		err = r.Scan(&s.Code, &day, &s.Dim, &n)
		s.Day = day.Unix()
		return s, n, err
	},
	scanKey: func(r pgx.CollectableRow) (k clicks.DimKey, err error) {
		var day time.Time
		err = r.Scan(&k.Code, &day, &k.Dim, &k.Val)
		k.Day = day.Unix()
		return k, err
	},
}
