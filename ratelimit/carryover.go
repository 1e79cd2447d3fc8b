package ratelimit

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// What a zone keeps in process — its keys in the in-process store and in
// the `local` fallback, the refusals of its deny cache, an approximate
// zone's units not yet synced — lives in a zoneState, which a config
// reload hands from the old config's handler to the new one's when the
// zone is unchanged.
//
// A zone's state is identified by a digest and an occurrence. The digest
// covers the zone's place (the listen addresses of its server) and its
// definition: the zone's JSON as loaded, and the handler settings that
// shape its state (the store and key prefix, max_keys, instances,
// on_error, hash_tag, whether it keeps a deny cache). The occurrence is
// how many zones with that digest were provisioned before it in the same
// config load (one load: one metrics registry, see caddy.Context): two
// identical zones in one config hold two states, and a zone keeps its own
// when other handlers are added, removed or changed, or when it moves
// within its server, as long as no identical zone comes before it.
//
// A zone whose definition changed gets a new digest and starts fresh: its
// old counters were kept under another quota (or another key, store or
// matcher), and handing them to whichever zone now sits in its place could
// refuse clients that were never refused. (On Redis a zone's counters
// outlive any reload; only this process's copy starts over.)
//
// Caddy provisions a new config before it cleans up the old one, and the
// old one's servers finish their requests meanwhile: both handlers then
// decide on the same state, so nothing is lost or counted twice. The state
// goes when its last handler is cleaned up; an approximate zone's table
// then sends its last units, once.
var carried = struct {
	sync.Mutex
	states map[carryID]*zoneState
	loads  map[any]*carryLoad // by config load (its metrics registry)
}{states: map[carryID]*zoneState{}, loads: map[any]*carryLoad{}}

// carryID identifies a zone's state across config loads.
type carryID struct {
	digest [sha256.Size]byte
	n      int // occurrence of the digest in its config load
}

// carryLoad counts, in one config load, the zones of each digest.
type carryLoad struct {
	handlers int // provisioned and not cleaned up; the entry goes at 0
	seen     map[[sha256.Size]byte]int
}

// zoneState is what one zone keeps in process (see carried).
type zoneState struct {
	id     carryID
	refs   int                  // handlers using it
	mem    *limiter.MemoryStore // the in-process store's keys; nil on Redis
	local  *limiter.MemoryStore // the local fallback's keys; nil without on_error local
	deny   *denyTable           // nil without a deny cache
	approx *approxTable         // approximate zones on Redis
	owners []*approxOwner       // of approx, in provisioning order: the last syncs
}

// carryShape is what a handler's settings give a zone's state.
type carryShape struct {
	Place     string `json:"place"` // the server's listen addresses
	Store     string `json:"store"`
	MaxKeys   int    `json:"max_keys"`
	Instances int    `json:"instances"`
	OnError   string `json:"on_error"`
	HashTag   string `json:"hash_tag"`
	Deny      bool   `json:"deny"`
}

// zoneDefs returns the zones' definitions as loaded, for their digests:
// taken before provisioning consumes the zones' raw matchers.
func zoneDefs(zones []*Zone) ([]json.RawMessage, error) {
	defs := make([]json.RawMessage, len(zones))
	for i, z := range zones {
		b, err := json.Marshal(z)
		if err != nil {
			return nil, fmt.Errorf("zone %q: %w", z.Name, err)
		}
		defs[i] = b
	}
	return defs, nil
}

// storeIdentity names the store a handler's zones are counted on, for
// their digests (hashed, never shown: a Redis URL may hold a password).
func (h *Handler) storeIdentity() (string, error) {
	switch {
	case h.inProcess:
		return "memory", nil
	case h.client != nil:
		cfg, err := json.Marshal(h.Redis.Expand())
		if err != nil {
			return "", err
		}
		return "redis " + h.prefix + " " + string(cfg), nil
	}
	return fmt.Sprintf("%T %p", h.store, h.store), nil // set by a test: its own
}

// provisionCarry takes each zone's state, the previous config's when the
// zone is unchanged, and builds the handler's in-process stores and deny
// cache on them. deny: whether the zones keep a deny cache.
func (h *Handler) provisionCarry(ctx caddy.Context, defs []json.RawMessage, deny bool) error {
	store, err := h.storeIdentity()
	if err != nil {
		return err
	}
	shape := carryShape{Store: store, MaxKeys: h.MaxKeys, Instances: h.Instances,
		OnError: h.OnError, HashTag: h.HashTag, Deny: deny}
	if srv, ok := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); ok {
		shape.Place = strings.Join(srv.Listen, " ")
	}
	var scope any = new(byte) // without a registry, a load of its own
	if reg := ctx.GetMetricsRegistry(); reg != nil {
		scope = reg
	}
	digests := make([][sha256.Size]byte, len(h.Zones))
	for i := range h.Zones {
		b, err := json.Marshal(struct {
			Shape carryShape      `json:"shape"`
			Zone  json.RawMessage `json:"zone"`
		}{shape, defs[i]})
		if err != nil {
			return err
		}
		digests[i] = sha256.Sum256(b)
	}

	carried.Lock()
	defer carried.Unlock()
	load := carried.loads[scope]
	if load == nil {
		load = &carryLoad{seen: map[[sha256.Size]byte]int{}}
		carried.loads[scope] = load
	}
	load.handlers++
	h.carryScope = scope
	for i, z := range h.Zones {
		id := carryID{digest: digests[i], n: load.seen[digests[i]]}
		load.seen[digests[i]]++
		st := carried.states[id]
		if st == nil {
			st = &zoneState{id: id}
			carried.states[id] = st
		}
		st.refs++
		h.carried = append(h.carried, st)
		h.useState(z, st, deny)
	}
	return nil
}

// useState makes the handler's stores and deny cache use st for zone z,
// creating the parts it lacks.
func (h *Handler) useState(z *Zone, st *zoneState, deny bool) {
	if h.inProcess {
		if st.mem == nil {
			st.mem = limiter.NewMemoryStore(h.now, h.MaxKeys)
		}
		if h.store == nil {
			h.store = limiter.NewZoneMemory(h.now, h.prefix)
		}
		h.store.(*limiter.ZoneMemory).SetZone(z.Name, st.mem)
	}
	if z.onError == failLocal {
		if st.local == nil {
			st.local = limiter.NewMemoryStore(h.now, h.MaxKeys)
		}
		if h.local == nil {
			h.local = limiter.NewZoneMemory(h.now, h.prefix)
		}
		h.local.SetZone(z.Name, st.local)
	}
	if deny {
		if st.deny == nil {
			st.deny = newDenyTable()
		}
		if h.deny == nil {
			h.deny = &denyCache{tables: map[*Zone]*denyTable{}}
		}
		h.deny.tables[z] = st.deny
	}
}

// ownApprox makes o the owner of st's approximate table, made by newTable
// when st has none yet, and returns the table.
func (st *zoneState) ownApprox(o *approxOwner, newTable func() *approxTable) *approxTable {
	carried.Lock()
	defer carried.Unlock()
	st.owners = append(st.owners, o)
	if st.approx == nil {
		st.approx = newTable()
	} else {
		st.approx.owner.Store(o)
	}
	return st.approx
}

// cleanupCarry gives back the handler's zone states; a state no other
// handler uses goes, its approximate table sending its last units.
func (h *Handler) cleanupCarry() {
	var closing []*approxTable
	carried.Lock()
	for _, st := range h.carried {
		st.refs--
		st.owners = slices.DeleteFunc(st.owners, func(o *approxOwner) bool { return o.handler == h })
		switch {
		case st.refs == 0:
			delete(carried.states, st.id)
			if st.approx != nil {
				closing = append(closing, st.approx)
			}
		case st.approx != nil && len(st.owners) > 0:
			st.approx.owner.Store(st.owners[len(st.owners)-1])
		}
	}
	h.carried = nil
	if load := carried.loads[h.carryScope]; load != nil {
		if load.handlers--; load.handlers == 0 {
			delete(carried.loads, h.carryScope)
		}
	}
	h.carryScope = nil
	carried.Unlock()

	for _, z := range h.Zones {
		z.approx = nil // its state's, closed below when it goes
	}
	for _, t := range closing {
		t.close()
	}
}

// carriedSize reports how many zone states and config loads the process
// holds (for tests: no leak across reloads).
func carriedSize() (states, loads int) {
	carried.Lock()
	defer carried.Unlock()
	return len(carried.states), len(carried.loads)
}
