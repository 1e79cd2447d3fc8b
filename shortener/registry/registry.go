// Package registry knows this process's shortener handlers by the store
// they use, for the modules outside the http app that act on their
// stores: the events handler writing the rate limiter's events into
// webhook outboxes (shortener/hookevents) and the on-demand TLS permission
// asking for link domains (shortener/ondemand). The handlers of two
// configs overlap during a reload; both use one store, which is counted
// once. It imports nothing of Caddy or zap.
package registry

import (
	"sync"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

var reg = struct {
	sync.Mutex
	owners map[any]entry
}{owners: map[any]entry{}}

// entry is what a handler offers; key names its store.
type entry struct {
	key     any
	outbox  link.EventRecorder // nil without webhooks
	domains link.DomainStore   // nil for a store without link domains
}

// StoreKey names the store s, alike for every handler using it: the
// embedded store itself (shared across reloads), or the PostgreSQL pool
// (shared by DSN).
func StoreKey(s link.Store) any {
	if pg, ok := s.(*store.PostgresStore); ok {
		return pg.Pool
	}
	return s
}

// Add registers owner's store s (not wrapped) and its link domains, if it
// keeps them.
func Add(owner any, s link.Store) {
	e := entry{key: StoreKey(s)}
	e.domains, _ = s.(link.DomainStore)
	reg.Lock()
	defer reg.Unlock()
	reg.owners[owner] = e
}

// SetOutbox registers the outbox of owner's store (its webhooks are on).
func SetOutbox(owner any, rec link.EventRecorder) {
	reg.Lock()
	defer reg.Unlock()
	e := reg.owners[owner]
	if e.key == nil {
		e.key = rec
	}
	e.outbox = rec
	reg.owners[owner] = e
}

// SetDomains registers a domain store for owner under key (tests, and
// stores that are not link stores).
func SetDomains(owner, key any, d link.DomainStore) {
	reg.Lock()
	defer reg.Unlock()
	reg.owners[owner] = entry{key: key, domains: d}
}

// Remove forgets owner.
func Remove(owner any) {
	reg.Lock()
	defer reg.Unlock()
	delete(reg.owners, owner)
}

// Outboxes returns one recorder per store with webhooks.
func Outboxes() map[any]link.EventRecorder {
	reg.Lock()
	defer reg.Unlock()
	out := map[any]link.EventRecorder{}
	for _, e := range reg.owners {
		if e.outbox != nil {
			out[e.key] = e.outbox
		}
	}
	return out
}

// DomainStores returns one domain store per store keeping link domains.
func DomainStores() map[any]link.DomainStore {
	reg.Lock()
	defer reg.Unlock()
	out := map[any]link.DomainStore{}
	for _, e := range reg.owners {
		if e.domains != nil {
			out[e.key] = e.domains
		}
	}
	return out
}
