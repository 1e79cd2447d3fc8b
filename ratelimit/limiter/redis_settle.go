package limiter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// settleItem is one settlement or lease in a settle call: its key and its
// five script values (see settle.lua).
type settleItem struct {
	key  string
	args [5]any
}

// Settle implements Settler: one call of decide.lua in mode 's' per Redis
// Cluster slot (one off a cluster), leases and settlements together.
// Sent alone, not coalesced: a request settles once, after its response.
func (s *RedisStore) Settle(ctx context.Context, at time.Time, settles []Settlement, leases []Lease) error {
	items := make([]settleItem, 0, len(settles)+len(leases))
	for _, st := range settles {
		p, err := settleParams(st)
		if err != nil {
			return err
		}
		if p.calendarOn() {
			p.cal = calendarBounds(p.calendar, s.nowUs())
		}
		items = append(items, settleItem{st.Key, [5]any{p.code, p.events, p.windowUs / 1000, p.burstArg(), st.Delta}})
	}
	for _, l := range leases {
		if err := checkLeaseID(l.ID); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidAsk, err)
		}
		items = append(items, settleItem{l.Key, [5]any{codeConcurrency, 1, leaseTTLms(l.TTL), l.ID, 0}})
	}
	if len(items) == 0 {
		return nil
	}
	atUs := strconv.FormatInt(at.UnixMicro(), 10)
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	groups := [][]int{idx}
	if _, ok := s.c.(*redis.ClusterClient); ok {
		groups = groupBySlot(idx, func(i int) string { return items[i].key })
	}
	var errs []error
	for _, g := range groups {
		keys := make([]string, 0, len(g))
		args := make([]any, 0, 3+5*len(g))
		args = append(args, "s", atUs, len(g))
		for _, i := range g {
			keys = append(keys, items[i].key)
			args = append(args, items[i].args[:]...)
		}
		if err := decideScript.Run(ctx, s.c, keys, args...).Err(); err != nil && !errors.Is(err, redis.Nil) {
			errs = append(errs, fmt.Errorf("ratelimit settle: %w", err))
		}
	}
	return errors.Join(errs...)
}

var _ Settler = (*RedisStore)(nil)
