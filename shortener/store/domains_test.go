package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// domainStore is a store with link domains and events.
type domainStore interface {
	link.Store
	link.EventLog
	link.DomainStore
	link.DomainLinkRevoker
}

// openDomainStores opens both stores with events on or off and at most
// maxDomains domains (0: link.MaxDomains).
func openDomainStores(t *testing.T, events bool, maxDomains int) map[string]domainStore {
	pg := openPostgres(t).(*store.PostgresStore)
	em := openEmbedded(t).(*store.EmbeddedStore)
	pg.Events, em.Events = events, events
	pg.MaxDomains, em.MaxDomains = maxDomains, maxDomains
	return map[string]domainStore{"postgres": pg, "embedded": em}
}

// sameJSON tells whether a and b are the same JSON value (PostgreSQL's
// jsonb spaces and orders a document its own way), or both absent.
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// checkDomain fails t unless got is want as a store returns it: times in
// UTC, to the microsecond; empty keys nil.
func checkDomain(t *testing.T, got, want link.Domain) {
	t.Helper()
	ok := got.Host == want.Host && got.RootRedirect == want.RootRedirect && got.NotFoundRedirect == want.NotFoundRedirect &&
		sameJSON(got.AppleAppSiteAssociation, want.AppleAppSiteAssociation) && sameJSON(got.Assetlinks, want.Assetlinks) &&
		slices.Equal(got.Keys, want.Keys) && (got.Keys == nil) == (len(want.Keys) == 0) && got.Version == want.Version
	for _, tt := range [][2]time.Time{{got.CreatedAt, want.CreatedAt}, {got.UpdatedAt, want.UpdatedAt}} {
		ok = ok && tt[0].Location() == time.UTC && tt[0].Equal(tt[1].Truncate(time.Microsecond))
	}
	if !ok {
		t.Errorf("domain %+v\nwant %+v", got, want)
	}
}

// TestDomainCRUD: create, read, list by host, update (every field, the
// version, the update time), delete.
func TestDomainCRUD(t *testing.T) {
	for name, s := range openDomainStores(t, false, 0) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now() // local, to the nanosecond: stores return UTC microseconds
			full := link.Domain{Host: "b.example", RootRedirect: "https://b.example/home", NotFoundRedirect: "https://b.example/404",
				AppleAppSiteAssociation: json.RawMessage(`{"applinks":{"details":[{"appIDs":["T.b"],"paths":["*"]}]}}`),
				Assetlinks:              json.RawMessage(`[{"relation":["delegate_permission/common.handle_all_urls"]}]`),
				Keys:                    []string{"fp-1", "fp-2"}, CreatedAt: now, UpdatedAt: now, Version: 7}
			bare := link.Domain{Host: "a.example", Keys: []string{}, CreatedAt: now, UpdatedAt: now}
			for _, d := range []link.Domain{full, bare} {
				if err := s.CreateDomain(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
			full.Version, bare.Version, bare.Keys = 1, 1, nil
			got, err := s.Domain(ctx, "b.example")
			if err != nil {
				t.Fatal(err)
			}
			checkDomain(t, got, full)
			all, err := s.Domains(ctx)
			if err != nil || len(all) != 2 {
				t.Fatalf("listed %+v, %v", all, err)
			}
			checkDomain(t, all[0], bare)
			checkDomain(t, all[1], full)

			later := now.Add(time.Minute)
			up, err := s.UpdateDomain(ctx, "b.example", later, func(d *link.Domain) error {
				checkDomain(t, *d, full)
				d.RootRedirect, d.NotFoundRedirect, d.AppleAppSiteAssociation = "", "https://b.example/gone", nil
				d.Assetlinks, d.Keys = json.RawMessage(`[]`), append(d.Keys, "fp-3")
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			full.RootRedirect, full.NotFoundRedirect, full.AppleAppSiteAssociation = "", "https://b.example/gone", nil
			full.Assetlinks, full.Keys, full.Version, full.UpdatedAt = json.RawMessage(`[]`), []string{"fp-1", "fp-2", "fp-3"}, 2, later
			checkDomain(t, up, full)
			got, err = s.Domain(ctx, "b.example")
			if err != nil {
				t.Fatal(err)
			}
			checkDomain(t, got, full)
			up, err = s.UpdateDomain(ctx, "b.example", later.Add(time.Second), func(d *link.Domain) error { d.Keys = nil; return nil })
			full.Keys, full.Version, full.UpdatedAt = nil, 3, later.Add(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			checkDomain(t, up, full)

			if err := s.DeleteDomain(ctx, "a.example"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Domain(ctx, "a.example"); !errors.Is(err, link.ErrDomainNotFound) {
				t.Errorf("read after delete: %v", err)
			}
			if all, err := s.Domains(ctx); err != nil || len(all) != 1 || all[0].Host != "b.example" {
				t.Errorf("listed after delete %+v, %v", all, err)
			}
		})
	}
}

// TestDomainErrors: a taken host, a missing one, an update that fails or
// changes the host (nothing changes), a host no store takes.
func TestDomainErrors(t *testing.T) {
	for name, s := range openDomainStores(t, false, 0) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Microsecond)
			d := link.Domain{Host: "a.example", RootRedirect: "https://a.example/", CreatedAt: now, UpdatedAt: now, Version: 1}
			if err := s.CreateDomain(ctx, d); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateDomain(ctx, link.Domain{Host: "a.example", CreatedAt: now, UpdatedAt: now}); !errors.Is(err, link.ErrDomainTaken) {
				t.Errorf("creating a taken host: %v", err)
			}
			for _, host := range []string{"", "a.example/x"} {
				if err := s.CreateDomain(ctx, link.Domain{Host: host, CreatedAt: now, UpdatedAt: now}); err == nil {
					t.Errorf("created host %q", host)
				}
			}
			if _, err := s.Domain(ctx, "none.example"); !errors.Is(err, link.ErrDomainNotFound) {
				t.Errorf("reading a missing domain: %v", err)
			}
			if _, err := s.UpdateDomain(ctx, "none.example", now, func(*link.Domain) error { return nil }); !errors.Is(err, link.ErrDomainNotFound) {
				t.Errorf("updating a missing domain: %v", err)
			}
			if err := s.DeleteDomain(ctx, "none.example"); !errors.Is(err, link.ErrDomainNotFound) {
				t.Errorf("deleting a missing domain: %v", err)
			}
			refused := errors.New("refused")
			if _, err := s.UpdateDomain(ctx, "a.example", now.Add(time.Hour), func(d *link.Domain) error {
				d.RootRedirect = "https://elsewhere.example/"
				return refused
			}); !errors.Is(err, refused) {
				t.Errorf("a failing update: %v", err)
			}
			if _, err := s.UpdateDomain(ctx, "a.example", now.Add(time.Hour), func(d *link.Domain) error {
				d.Host, d.RootRedirect = "b.example", "https://elsewhere.example/"
				return nil
			}); err == nil || errors.Is(err, link.ErrDomainNotFound) {
				t.Errorf("changing the host: %v", err)
			}
			got, err := s.Domain(ctx, "a.example")
			if err != nil {
				t.Fatal(err)
			}
			checkDomain(t, got, d)
			if _, err := s.Domain(ctx, "b.example"); !errors.Is(err, link.ErrDomainNotFound) {
				t.Errorf("the host change made b.example: %v", err)
			}
		})
	}
}

// TestDomainBound: concurrent creates pass MaxDomains not one too many.
func TestDomainBound(t *testing.T) {
	const bound, tries = 5, 20
	for name, s := range openDomainStores(t, false, bound) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now()
			var ok, many atomic.Int32
			var wg sync.WaitGroup
			for i := range tries {
				wg.Go(func() {
					err := s.CreateDomain(ctx, link.Domain{Host: fmt.Sprintf("d%02d.example", i), CreatedAt: now, UpdatedAt: now})
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, link.ErrTooManyDomains):
						many.Add(1)
					default:
						t.Error(err)
					}
				})
			}
			wg.Wait()
			all, err := s.Domains(ctx)
			if err != nil || len(all) != bound || ok.Load() != bound || many.Load() != tries-bound {
				t.Errorf("%d domains (%v), %d created, %d refused", len(all), err, ok.Load(), many.Load())
			}
		})
	}
}

// TestDomainConcurrentUpdates: updates of one domain take turns, none
// lost.
func TestDomainConcurrentUpdates(t *testing.T) {
	const n = 50
	for name, s := range openDomainStores(t, false, 0) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now()
			if err := s.CreateDomain(ctx, link.Domain{Host: "a.example", CreatedAt: now, UpdatedAt: now}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					if _, err := s.UpdateDomain(ctx, "a.example", time.Now(), func(d *link.Domain) error {
						d.Keys = append(d.Keys, fmt.Sprintf("fp-%02d", i))
						return nil
					}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			d, err := s.Domain(ctx, "a.example")
			if err != nil {
				t.Fatal(err)
			}
			keys := slices.Sorted(slices.Values(d.Keys))
			want := make([]string, n)
			for i := range want {
				want[i] = fmt.Sprintf("fp-%02d", i)
			}
			if d.Version != n+1 || !slices.Equal(keys, want) {
				t.Errorf("version %d, keys %v", d.Version, d.Keys)
			}
		})
	}
}
