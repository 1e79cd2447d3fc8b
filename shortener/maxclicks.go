package shortener

import (
	"context"
	"errors"
)

// ServeCounter is the synchronous counter of links with max_clicks: the
// bound holds across every instance because the store, not a cache,
// decides each redirect. Both stores implement it.
//
// Every redirect answered for such a link counts, GET and HEAD, people,
// bots and prefetches alike: a response carrying the Location is a served
// redirect. (Click counting, clicks.md, counts fewer: GET only, no
// prefetch, and in the background.)
type ServeCounter interface {
	// TakeServe counts one redirect of the link with this code if its
	// max_clicks allows another, durably before it returns. ok reports
	// whether the redirect may be served; left is how many may still be
	// served after it (0 once exhausted). A link without max_clicks: ok,
	// left -1, nothing counted. ErrNotFound if absent.
	TakeServe(ctx context.Context, code string) (left int64, ok bool, err error)
}

// errNoCounter: the store cannot count redirects, so a link with
// max_clicks cannot be served within its bound.
var errNoCounter = errors.New("the link store has no redirect counter for max_clicks")

// takeServe asks the store whether a redirect of code, a link with
// max_clicks, may be served and counts it. Once the link is exhausted,
// this instance's L1 holds it as gone, so later requests answer 410
// without asking (an invalidation meanwhile, an edit, wins).
func (c *cache) takeServe(ctx context.Context, code string) (bool, error) {
	s := c.store
	if sh, ok := s.(sharedStore); ok {
		s = sh.Store
	}
	sc, ok := s.(ServeCounter)
	if !ok {
		return false, errNoCounter
	}
	epoch := c.epoch(code)
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	left, ok, err := sc.TakeServe(ctx, code)
	if err != nil {
		return false, err
	}
	if !ok || left == 0 {
		c.setLocal(code, c.gone(), epoch)
	}
	return ok, nil
}
