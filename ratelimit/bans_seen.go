package ratelimit

import (
	"time"

	"github.com/maypok86/otter/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// banDenyFor bounds how long the deny cache answers a key refused by a
// ban: a ban lifted through the admin API of any instance reaches every
// other within it, as their next request for the key goes to the store.
const banDenyFor = time.Second

// bansSeenSize bounds the banned keys one zone remembers the raw value of
// (for the admin API's list, with log_keys).
const bansSeenSize = 10000

// bansSeen remembers, per store key, the expanded key of the bans this
// instance saw (set or in force), for the admin list when log_keys is on.
type bansSeen struct {
	keys *otter.Cache[string, string]
}

func newBansSeen() *bansSeen {
	return &bansSeen{keys: otter.Must(&otter.Options[string, string]{MaximumSize: bansSeenSize})}
}

// noteBans counts the bans the store set for ds and, with log_keys,
// remembers the keys it saw banned.
func (h *Handler) noteBans(ds []zoneDecision) {
	for i := range ds {
		d := &ds[i]
		if d.zone.setHere == nil {
			continue
		}
		if !d.res.Banned {
			if d.res.Allowed { // a ban this instance set was lifted
				d.zone.setHere.lifted(d.ask.Key)
			}
			continue
		}
		if d.res.BanSet {
			d.zone.bansSet.Inc()
			d.zone.setHere.set(d.ask.Key, d.res.Now.Add(d.res.RetryAfter))
		}
		if h.LogKeys && d.zone.seen != nil {
			d.zone.seen.keys.Set(d.ask.Key, d.key)
		}
	}
}

// bansSetCounter is the zone's caddy_ratelimit_bans_set_total.
func bansSetCounter(zone string) prometheus.Counter {
	return metrics.bansSet.WithLabelValues(zone)
}
