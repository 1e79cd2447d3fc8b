// Package usagepool shares values (Redis clients, PostgreSQL pools, open
// stores, plan loaders) across handlers and config reloads: a typed
// caddy.UsagePool whose every use is a Handle released exactly once, and
// whose last release destroys the value.
//
// A reload provisions the new config before it cleans up the old one, so
// a value both ask for (same key) stays open across the switch.
package usagepool

import (
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
)

// Pool shares values of type T by key.
type Pool[T any] struct {
	uses    *caddy.UsagePool
	destroy func(T) error
}

// New returns an empty pool; destroy closes a value when its last use is
// released.
func New[T any](destroy func(T) error) *Pool[T] {
	return &Pool[T]{uses: caddy.NewUsagePool(), destroy: destroy}
}

// destructor is how a value sits in the caddy.UsagePool.
type destructor[T any] struct {
	v       T
	destroy func(T) error
}

func (d destructor[T]) Destruct() error { return d.destroy(d.v) }

// LoadOrNew returns the value of key, made by create if the pool has none,
// and a handle on this use of it. create runs at most once per key while
// the value is in use; its error is returned and nothing is kept.
func (p *Pool[T]) LoadOrNew(key string, create func() (T, error)) (T, *Handle[T], error) {
	v, _, err := p.uses.LoadOrNew(key, func() (caddy.Destructor, error) {
		x, err := create()
		if err != nil {
			return nil, err
		}
		return destructor[T]{v: x, destroy: p.destroy}, nil
	})
	if err != nil {
		var zero T
		return zero, nil, err
	}
	return v.(destructor[T]).v, &Handle[T]{pool: p, key: key}, nil
}

// Uses returns how many handles on key are not released yet.
func (p *Pool[T]) Uses(key string) int {
	n, _ := p.uses.References(key)
	return n
}

// Handle is one use of a pooled value.
type Handle[T any] struct {
	pool     *Pool[T]
	key      string
	released atomic.Bool
}

// Release gives the use back; the last release of a key destroys its value
// and returns destroy's error. Only the first call of a handle counts:
// later ones (and a nil handle) do nothing, so a Cleanup that runs twice
// cannot release another user's share.
func (h *Handle[T]) Release() error {
	if h == nil || !h.released.CompareAndSwap(false, true) {
		return nil
	}
	_, err := h.pool.uses.Delete(h.key)
	return err
}
