package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// embeddedDomains is the bucket of link domains: host → embeddedDomain.
// bbolt orders keys byte by byte, as PostgreSQL's COLLATE "C" does.
var embeddedDomains = []byte("domains")

// embeddedDomain is a link domain as stored; times are Unix µs.
type embeddedDomain struct {
	Host                    string          `json:"host"`
	RootRedirect            string          `json:"root_redirect,omitempty"`
	NotFoundRedirect        string          `json:"not_found_redirect,omitempty"`
	AppleAppSiteAssociation json.RawMessage `json:"apple_app_site_association,omitempty"`
	Assetlinks              json.RawMessage `json:"assetlinks,omitempty"`
	Keys                    []string        `json:"keys,omitempty"`
	CreatedAt               int64           `json:"created_at"`
	UpdatedAt               int64           `json:"updated_at"`
	Version                 int64           `json:"version"`
}

func toEmbeddedDomain(d link.Domain) embeddedDomain {
	return embeddedDomain{Host: d.Host, RootRedirect: d.RootRedirect, NotFoundRedirect: d.NotFoundRedirect,
		AppleAppSiteAssociation: rawOrNil(d.AppleAppSiteAssociation), Assetlinks: rawOrNil(d.Assetlinks),
		Keys: nilIfEmpty(d.Keys), CreatedAt: link.ToMicros(d.CreatedAt), UpdatedAt: link.ToMicros(d.UpdatedAt),
		Version: d.Version}
}

func (r embeddedDomain) domain() link.Domain {
	return link.Domain{Host: r.Host, RootRedirect: r.RootRedirect, NotFoundRedirect: r.NotFoundRedirect,
		AppleAppSiteAssociation: rawOrNil(r.AppleAppSiteAssociation), Assetlinks: rawOrNil(r.Assetlinks),
		Keys: nilIfEmpty(r.Keys), CreatedAt: link.FromMicros(r.CreatedAt), UpdatedAt: link.FromMicros(r.UpdatedAt),
		Version: r.Version}
}

// updateDomains runs fn in a write transaction with the domains bucket.
func (s *EmbeddedStore) updateDomains(ctx context.Context, fn func(b *bolt.Bucket) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(embeddedDomains)
		if err != nil {
			return err
		}
		return fn(b)
	})
}

// viewDomains runs fn in a read transaction; without the bucket (no
// domain ever made) fn does not run.
func (s *EmbeddedStore) viewDomains(ctx context.Context, fn func(b *bolt.Bucket) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(embeddedDomains); b != nil {
			return fn(b)
		}
		return nil
	})
}

// readDomain decodes the domain of host (copying it out of the
// transaction's memory), or ErrDomainNotFound.
func readDomain(b *bolt.Bucket, host string) (embeddedDomain, error) {
	var r embeddedDomain
	v := b.Get([]byte(host))
	if v == nil {
		return r, link.ErrDomainNotFound
	}
	return r, json.Unmarshal(v, &r)
}

// putDomain writes r with a value of its own: bbolt keeps it until the
// commit.
func putDomain(b *bolt.Bucket, r embeddedDomain) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.Put([]byte(r.Host), v)
}

// CreateDomain implements link.DomainStore; bbolt runs one write
// transaction at a time, so the count is exact.
func (s *EmbeddedStore) CreateDomain(ctx context.Context, d link.Domain) error {
	if err := checkNewDomain(d); err != nil {
		return fmt.Errorf("creating link domain: %w", err)
	}
	r := toEmbeddedDomain(d)
	r.Version = 1
	err := s.updateDomains(ctx, func(b *bolt.Bucket) error {
		switch {
		case b.Get([]byte(d.Host)) != nil:
			return link.ErrDomainTaken
		case b.Stats().KeyN >= domainLimit(s.MaxDomains):
			return link.ErrTooManyDomains
		}
		return putDomain(b, r)
	})
	if err != nil && !errors.Is(err, link.ErrDomainTaken) && !errors.Is(err, link.ErrTooManyDomains) {
		err = fmt.Errorf("creating link domain: %w", err)
	}
	return err
}

// Domain implements link.DomainStore.
func (s *EmbeddedStore) Domain(ctx context.Context, host string) (link.Domain, error) {
	d, err := link.Domain{}, link.ErrDomainNotFound
	if verr := s.viewDomains(ctx, func(b *bolt.Bucket) error {
		var r embeddedDomain
		if r, err = readDomain(b, host); err == nil {
			d = r.domain()
		}
		return nil
	}); verr != nil {
		return d, verr
	}
	if err != nil && !errors.Is(err, link.ErrDomainNotFound) {
		err = fmt.Errorf("reading link domain: %w", err)
	}
	return d, err
}

// Domains implements link.DomainStore: the bucket in key order, which
// is host order.
func (s *EmbeddedStore) Domains(ctx context.Context) ([]link.Domain, error) {
	var out []link.Domain
	err := s.viewDomains(ctx, func(b *bolt.Bucket) error {
		return b.ForEach(func(_, v []byte) error {
			var r embeddedDomain
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			out = append(out, r.domain())
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing link domains: %w", err)
	}
	return out, nil
}

// UpdateDomain implements link.DomainStore in one write transaction.
func (s *EmbeddedStore) UpdateDomain(ctx context.Context, host string, now time.Time, fn func(*link.Domain) error) (link.Domain, error) {
	var out link.Domain
	err := s.updateDomains(ctx, func(b *bolt.Bucket) error {
		r, err := readDomain(b, host)
		if err != nil {
			return err
		}
		d := r.domain()
		if err := fn(&d); err != nil {
			return err
		}
		if d.Host != host {
			return errHostChanged(host, d.Host)
		}
		d.Version, d.UpdatedAt = r.Version+1, link.FromMicros(link.ToMicros(now))
		next := toEmbeddedDomain(d)
		out = next.domain()
		return putDomain(b, next)
	})
	return out, err
}

// DeleteDomain implements link.DomainStore.
func (s *EmbeddedStore) DeleteDomain(ctx context.Context, host string) error {
	return s.updateDomains(ctx, func(b *bolt.Bucket) error {
		if b.Get([]byte(host)) == nil {
			return link.ErrDomainNotFound
		}
		return b.Delete([]byte(host))
	})
}

// RevokeDomainLinks implements link.DomainLinkRevoker in one write
// transaction: the links bucket from the domain's prefix for as long as
// keys hold it, each revocation recording its event as Revoke's does.
func (s *EmbeddedStore) RevokeDomainLinks(ctx context.Context, host string, at time.Time) (int, error) {
	if err := checkDomainHost(host); err != nil {
		return 0, fmt.Errorf("revoking domain links: %w", err)
	}
	if at.IsZero() {
		return 0, errors.New("revoking domain links: zero time")
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int
	err := s.Db.Update(func(tx *bolt.Tx) error {
		n = 0
		b := tx.Bucket(EmbeddedLinks)
		live, err := liveWithPrefix(b, []byte(domainPrefix(host)))
		if err != nil {
			return err
		}
		for _, l := range live {
			code, rec := l.code, l.rec
			rec.RevokedAt = link.ToMicros(at)
			rec.Version = max(rec.Version, 1) + 1
			v, err := json.Marshal(rec)
			if err != nil {
				return err
			}
			if err := recordEvent(tx, s.Events, link.EventRevoked, code, v); err != nil {
				return err
			}
			if err := b.Put([]byte(code), v); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("revoking domain links: %w", err)
	}
	return n, nil
}

// keyedRecord is a link's record with its key.
type keyedRecord struct {
	code string
	rec  embeddedRecord
}

// liveWithPrefix reads the records of the links bucket b whose keys
// start with prefix and that are not revoked, in key order (the keys
// copied: the bucket is written after).
func liveWithPrefix(b *bolt.Bucket, prefix []byte) ([]keyedRecord, error) {
	var live []keyedRecord
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var rec embeddedRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return nil, fmt.Errorf("link %s: %w", k, err)
		}
		if rec.RevokedAt == 0 {
			live = append(live, keyedRecord{string(k), rec})
		}
	}
	return live, nil
}

var (
	_ link.DomainStore       = (*EmbeddedStore)(nil)
	_ link.DomainLinkRevoker = (*EmbeddedStore)(nil)
)
