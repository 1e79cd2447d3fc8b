package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// domainColumns are the columns scanDomain reads, in its order.
const domainColumns = `host, root_redirect, not_found_redirect, apple_app_site_association, assetlinks, keys,
	created_at, updated_at, version`

func scanDomain(row pgx.Row) (link.Domain, error) {
	var d link.Domain
	var aasa, assetlinks []byte
	err := row.Scan(&d.Host, &d.RootRedirect, &d.NotFoundRedirect, &aasa, &assetlinks, &d.Keys,
		&d.CreatedAt, &d.UpdatedAt, &d.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, link.ErrDomainNotFound
	}
	if err != nil {
		return d, err
	}
	d.AppleAppSiteAssociation, d.Assetlinks = rawOrNil(aasa), rawOrNil(assetlinks)
	d.Keys = nilIfEmpty(d.Keys)
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d, nil
}

// jsonbParam is a JSON document as a jsonb parameter: NULL for none.
func jsonbParam(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// CreateDomain implements link.DomainStore: the checks and the insert
// under a transaction-scoped advisory lock, so concurrent creates cannot
// pass MaxDomains together.
func (s *PostgresStore) CreateDomain(ctx context.Context, d link.Domain) error {
	if err := checkNewDomain(d); err != nil {
		return fmt.Errorf("creating link domain: %w", err)
	}
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		// Two statements: read committed takes the count's snapshot when
		// its statement starts, which must be after the lock is held.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, domainLockKey); err != nil {
			return err
		}
		var n int
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT count(*), COALESCE(bool_or(host = $1), false) FROM shortener_domains`,
			d.Host).Scan(&n, &taken); err != nil {
			return err
		}
		switch {
		case taken:
			return link.ErrDomainTaken
		case n >= domainLimit(s.MaxDomains):
			return link.ErrTooManyDomains
		}
		_, err := tx.Exec(ctx, `INSERT INTO shortener_domains (host, root_redirect, not_found_redirect,
			apple_app_site_association, assetlinks, keys, created_at, updated_at, version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1)`,
			d.Host, d.RootRedirect, d.NotFoundRedirect, jsonbParam(d.AppleAppSiteAssociation), jsonbParam(d.Assetlinks),
			emptyIfNil(d.Keys), d.CreatedAt, d.UpdatedAt)
		return err
	})
	if err != nil && !errors.Is(err, link.ErrDomainTaken) && !errors.Is(err, link.ErrTooManyDomains) {
		err = fmt.Errorf("creating link domain: %w", err)
	}
	return err
}

// domainLockKey is the advisory lock key of domain creation: "edgekit"
// + 'd'.
const domainLockKey int64 = 0x65646765_6b697464

// Domain implements link.DomainStore.
func (s *PostgresStore) Domain(ctx context.Context, host string) (link.Domain, error) {
	d, err := scanDomain(s.Pool.QueryRow(ctx, `SELECT `+domainColumns+` FROM shortener_domains WHERE host = $1`, host))
	if err != nil && !errors.Is(err, link.ErrDomainNotFound) {
		err = fmt.Errorf("reading link domain: %w", err)
	}
	return d, err
}

// Domains implements link.DomainStore.
func (s *PostgresStore) Domains(ctx context.Context) ([]link.Domain, error) {
	rows, err := s.Pool.Query(ctx, `SELECT `+domainColumns+` FROM shortener_domains ORDER BY host`)
	if err != nil {
		return nil, fmt.Errorf("listing link domains: %w", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (link.Domain, error) { return scanDomain(r) })
	if err != nil {
		return nil, fmt.Errorf("listing link domains: %w", err)
	}
	return ds, nil
}

// UpdateDomain implements link.DomainStore: the row locked, fn applied,
// the row written back.
func (s *PostgresStore) UpdateDomain(ctx context.Context, host string, now time.Time, fn func(*link.Domain) error) (link.Domain, error) {
	var out link.Domain
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		d, err := scanDomain(tx.QueryRow(ctx, `SELECT `+domainColumns+` FROM shortener_domains WHERE host = $1 FOR UPDATE`, host))
		if err != nil {
			return err
		}
		if err := fn(&d); err != nil {
			return err
		}
		if d.Host != host {
			return errHostChanged(host, d.Host)
		}
		d.Version, d.UpdatedAt = d.Version+1, link.FromMicros(link.ToMicros(now))
		d.AppleAppSiteAssociation, d.Assetlinks, d.Keys = rawOrNil(d.AppleAppSiteAssociation), rawOrNil(d.Assetlinks), nilIfEmpty(d.Keys)
		if _, err := tx.Exec(ctx, `UPDATE shortener_domains SET root_redirect = $2, not_found_redirect = $3,
			apple_app_site_association = $4, assetlinks = $5, keys = $6, created_at = $7, updated_at = $8, version = $9
			WHERE host = $1`,
			host, d.RootRedirect, d.NotFoundRedirect, jsonbParam(d.AppleAppSiteAssociation), jsonbParam(d.Assetlinks),
			emptyIfNil(d.Keys), d.CreatedAt, d.UpdatedAt, d.Version); err != nil {
			return fmt.Errorf("updating link domain: %w", err)
		}
		out = d
		return nil
	})
	return out, err
}

// DeleteDomain implements link.DomainStore.
func (s *PostgresStore) DeleteDomain(ctx context.Context, host string) error {
	tag, err := s.Pool.Exec(ctx, `DELETE FROM shortener_domains WHERE host = $1`, host)
	if err != nil {
		return fmt.Errorf("deleting link domain: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return link.ErrDomainNotFound
	}
	return nil
}

// RevokeDomainLinks implements link.DomainLinkRevoker in one statement,
// each revocation recording its event as Revoke's does. Keys match by
// starts_with, never LIKE (a host's characters are no pattern); the
// range, the same keys in byte order (the prefix ends in '/', and '0'
// follows it), lets the primary key find them.
func (s *PostgresStore) RevokeDomainLinks(ctx context.Context, host string, at time.Time) (int, error) {
	if err := checkDomainHost(host); err != nil {
		return 0, fmt.Errorf("revoking domain links: %w", err)
	}
	if at.IsZero() {
		return 0, errors.New("revoking domain links: zero time")
	}
	prefix := domainPrefix(host)
	var n int
	err := s.Pool.QueryRow(ctx,
		"WITH "+changeCTE(
			`UPDATE shortener_links SET revoked_at = $2, version = version + 1
			 WHERE code >= $1 AND code < $3 AND starts_with(code, $1) AND revoked_at IS NULL`,
			link.EventRevoked, "", s.Events)+` SELECT count(*) FROM ch`,
		prefix, at, host+"0").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("revoking domain links: %w", err)
	}
	return n, nil
}

var (
	_ link.DomainStore       = (*PostgresStore)(nil)
	_ link.DomainLinkRevoker = (*PostgresStore)(nil)
)
