package ratelimit

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// bansSetHere are the bans this instance's requests set in one zone and
// their ends, for caddy_ratelimit_bans_in_force: at most bansSeenSize (past
// it, a new ban is counted once the ended ones are swept out).
type bansSetHere struct {
	mu    sync.Mutex
	until map[string]time.Time // by store key
}

func newBansSetHere() *bansSetHere { return &bansSetHere{until: map[string]time.Time{}} }

// set records a ban of key ending at until.
func (b *bansSetHere) set(key string, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.until) >= bansSeenSize {
		b.sweep(time.Now())
		if len(b.until) >= bansSeenSize {
			return
		}
	}
	b.until[key] = until
}

// lifted forgets key's ban: lifted, or seen not banned.
func (b *bansSetHere) lifted(key string) {
	b.mu.Lock()
	delete(b.until, key)
	b.mu.Unlock()
}

// inForce counts the bans still running at now, dropping the ended ones.
func (b *bansSetHere) inForce(now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep(now)
	return len(b.until)
}

func (b *bansSetHere) sweep(now time.Time) {
	for k, u := range b.until {
		if !now.Before(u) {
			delete(b.until, k)
		}
	}
}

// bansInForce is the collector of caddy_ratelimit_bans_in_force{zone}: per
// scrape, the bans the loaded handlers of this instance set and still run.
// Summed over instances it is the bans in force: each ban is set by one
// refusal. A ban lifted through another instance leaves this count when
// this instance next decides the key, or when the ban would have ended.
type bansInForce struct{ desc *prometheus.Desc }

var bansInForceCollector = bansInForce{desc: prometheus.NewDesc("caddy_ratelimit_bans_in_force",
	"Bans set by this instance's requests and still in force, per zone.", []string{"zone"}, nil)}

func (c bansInForce) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c bansInForce) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	counts := map[string]int{}
	for _, e := range loadedHandlers() {
		for _, z := range e.h.Zones {
			if z.setHere != nil {
				counts[z.Name] += z.setHere.inForce(now)
			}
		}
	}
	for zone, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), zone)
	}
}

// registerBansInForce registers the collector on a config's registry.
func registerBansInForce(registry *prometheus.Registry) error {
	if registry == nil {
		return nil
	}
	if err := registry.Register(bansInForceCollector); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
	}
	return nil
}
