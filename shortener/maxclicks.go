package shortener

import (
	"context"
	"errors"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// errNoCounter: the store cannot count redirects, so a link with
// max_clicks cannot be served within its bound.
var errNoCounter = errors.New("the link store has no redirect counter for max_clicks")

// takeServe asks the store whether a redirect of code, a link with
// max_clicks, may be served and counts it. Once the link is exhausted,
// this instance's L1 holds it as gone (with its fallback URL), so later requests answer 410
// without asking (an invalidation meanwhile, an edit, wins).
func (c *cache) takeServe(ctx context.Context, code, fallback string) (bool, error) {
	s := c.store
	if sh, ok := s.(sharedStore); ok {
		s = sh.Store
	}
	sc, ok := s.(link.ServeCounter)
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
		c.setLocal(code, c.goneTo(fallback), epoch)
	}
	return ok, nil
}
