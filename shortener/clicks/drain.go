package clicks

import (
	"context"
	"time"
)

// drainQuiet is how long no request may be in flight before Drain returns.
const drainQuiet = 100 * time.Millisecond

// Enter marks a request that may record a click as in flight, until its
// Leave: Drain waits for it.
func (r *Recorder) Enter() { r.entered.Add(1) }

// Leave ends what Enter began.
func (r *Recorder) Leave() { r.entered.Add(-1) }

// Drain waits, until ctx ends, for the requests in flight (Enter without
// Leave) to finish, so that their clicks reach the recorder before Close.
// On a reload Caddy cleans up the old config while its servers still
// finish their requests (it waits for them only when the process exits),
// and a connection that was reading a request when its server began
// shutting down may still start one: Drain returns once none was in
// flight for drainQuiet in a row. A click that comes after Close is
// Dropped and counted (reason shutdown), never lost unseen.
func (r *Recorder) Drain(ctx context.Context) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var quietSince time.Time
	for {
		now := time.Now()
		switch {
		case r.entered.Load() > 0:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = now
		case now.Sub(quietSince) >= drainQuiet:
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}
