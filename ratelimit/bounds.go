package ratelimit

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// parseCost parses a request's cost: a non-negative integer. A number too
// large for an int64 is a cost past any quota (math.MaxInt64), refused
// like any such cost; anything else is an error (status 400), showing at
// most maxLoggedValue bytes of s.
func parseCost(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && n > 0 {
		return math.MaxInt64, nil
	}
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid cost %s: must be a non-negative integer", loggedValue(s))
	}
	return n, nil
}

// checkBounds checks the zone's static numbers (after the checks of their
// sign): each alone, then the whole quota and the cost when no placeholder
// sets a part of the quota (else per request, once expanded). A static
// cost the static quota can never grant is a mistake, refused too, unless
// plans may grant more.
func (z *Zone) checkBounds() error {
	if err := limiter.CheckEvents("events", z.Events); err != nil {
		return onField("events", err)
	}
	if err := limiter.CheckEvents("burst", z.Burst); err != nil {
		return onField("burst", err)
	}
	if z.Window != 0 {
		if err := limiter.CheckWindow(time.Duration(z.Window)); err != nil {
			return onField("window", err)
		}
	}
	cost := int64(-1) // a template, or none
	if c := string(z.Cost); c != "" && !isTemplate(c) {
		var err error
		if cost, err = parseCost(c); err != nil {
			return onField("cost", err)
		}
		if cost > limiter.MaxEvents { // c: a cost past int64 reads as math.MaxInt64
			return onField("cost", fmt.Errorf("cost %s: must be at most 2^50 (%d)", strings.TrimSpace(c), int64(limiter.MaxEvents)))
		}
	}
	if z.Dynamic != nil && *z.Dynamic != (DynamicQuota{}) {
		return nil
	}
	l := limiter.Limit{Algorithm: cmp.Or(z.Algorithm, DefaultAlgorithm), Events: z.Events, Window: z.window(), Burst: z.Burst}
	if err := limiter.CheckLimit(l); err != nil {
		return err
	}
	if z.Plans == nil && cost > l.MaxCost() {
		return fmt.Errorf("cost %d: more than the zone can ever grant (%d)", cost, l.MaxCost())
	}
	return nil
}
