package ratelimit

import (
	"slices"
	"sync"
)

// The handlers of the running configs, for the admin API: a handler
// registers in Provision and unregisters in Cleanup. During a reload both
// configs' handlers are briefly present.
var registry = struct {
	sync.RWMutex
	next    uint64
	entries map[*Handler]*loadedHandler
}{entries: map[*Handler]*loadedHandler{}}

// loadedHandler is one provisioned handler as the admin API sees it.
type loadedHandler struct {
	id    uint64 // in order of provisioning, unique in the process
	h     *Handler
	brake *brakeCache
	// brakeStore: where its brake lives; brakeID identifies it (the Redis
	// client and key prefix, or the process), so that the admin API sets a
	// brake shared by several handlers once.
	brakeStore brakeStore
	brakeID    string
	brakeDesc  string // for the admin API: no secrets
}

// register adds h.
func register(e *loadedHandler) {
	registry.Lock()
	defer registry.Unlock()
	registry.next++
	e.id = registry.next
	registry.entries[e.h] = e
}

// unregister removes h.
func unregister(h *Handler) {
	registry.Lock()
	defer registry.Unlock()
	delete(registry.entries, h)
}

// loadedHandlers returns the registered handlers in provisioning order.
func loadedHandlers() []*loadedHandler {
	registry.RLock()
	out := make([]*loadedHandler, 0, len(registry.entries))
	for _, e := range registry.entries {
		out = append(out, e)
	}
	registry.RUnlock()
	slices.SortFunc(out, func(a, b *loadedHandler) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	return out
}
