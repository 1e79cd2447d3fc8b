package shortener

import (
	"sync"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// registry knows this process's shortener handlers by the store they use,
// for the modules outside the http app that act on their stores: the
// events handler writing the rate limiter's events into outboxes
// (shortener_webhooks) and the on-demand TLS permission asking for link
// domains (tls.permission.shortener). The handlers of two configs overlap
// during a reload; both use one store, which is counted once.
var registry = handlerRegistry{handlers: map[*Handler]registered{}}

type handlerRegistry struct {
	sync.Mutex
	handlers map[*Handler]registered
}

// registered is what a handler offers; key names its store (the embedded
// store, shared across reloads, or the PostgreSQL pool, shared by DSN).
type registered struct {
	key     any
	outbox  link.EventRecorder // nil without webhooks
	domains link.DomainStore   // nil for a store without link domains
}

// storeKey names the store s, alike for every handler using it.
func storeKey(s link.Store) any {
	s = unshared(s)
	if pg, ok := s.(*store.PostgresStore); ok {
		return pg.Pool
	}
	return s
}

// add registers h's store and its link domains, if it keeps them.
func (r *handlerRegistry) add(h *Handler) {
	s := unshared(h.store)
	reg := registered{key: storeKey(s)}
	reg.domains, _ = s.(link.DomainStore)
	r.Lock()
	defer r.Unlock()
	r.handlers[h] = reg
}

// setOutbox registers the outbox of h (webhooks are on).
func (r *handlerRegistry) setOutbox(h *Handler, key any, rec link.EventRecorder) {
	r.Lock()
	defer r.Unlock()
	reg := r.handlers[h]
	reg.key, reg.outbox = key, rec
	r.handlers[h] = reg
}

func (r *handlerRegistry) remove(h *Handler) {
	r.Lock()
	defer r.Unlock()
	delete(r.handlers, h)
}

// outboxes returns one recorder per store with webhooks.
func (r *handlerRegistry) outboxes() map[any]link.EventRecorder {
	r.Lock()
	defer r.Unlock()
	out := map[any]link.EventRecorder{}
	for _, reg := range r.handlers {
		if reg.outbox != nil {
			out[reg.key] = reg.outbox
		}
	}
	return out
}

// domainStores returns one domain store per store keeping link domains.
func (r *handlerRegistry) domainStores() map[any]link.DomainStore {
	r.Lock()
	defer r.Unlock()
	out := map[any]link.DomainStore{}
	for _, reg := range r.handlers {
		if reg.domains != nil {
			out[reg.key] = reg.domains
		}
	}
	return out
}
