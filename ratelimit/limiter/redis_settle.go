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
	key   string
	usage string // its usage key, or ""
	args  [5]any
}

// Settle implements Settler: one call of decide.lua in mode 's' per Redis
// Cluster slot (one off a cluster), leases and settlements together.
// Sent alone, not coalesced: a request settles once, after its response.
func (s *RedisStore) Settle(ctx context.Context, at time.Time, settles []Settlement, leases []Lease) ([]SettleResult, error) {
	items := make([]settleItem, 0, len(settles)+len(leases))
	for _, st := range settles {
		p, err := settleParams(st)
		if err != nil {
			return nil, err
		}
		if p.calendarOn() {
			p.cal = calendarBounds(p.calendar, s.nowUs())
		}
		var uk string
		if p.usage.on() {
			uk = UsageKey(st.Key)
		}
		items = append(items, settleItem{st.Key, uk, [5]any{p.code, p.events, p.windowUs / 1000, p.burstArg(), st.Delta}})
	}
	for _, l := range leases {
		if err := checkLeaseID(l.ID); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidAsk, err)
		}
		items = append(items, settleItem{l.Key, "", [5]any{codeConcurrency, 1, leaseTTLms(l.TTL), l.ID, 0}})
	}
	if len(items) == 0 {
		return nil, nil
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
	var results []SettleResult
	var errs []error
	for _, g := range groups {
		keys := make([]string, 0, len(g))
		args := make([]any, 0, 3+5*len(g))
		args = append(args, "s", atUs, len(g))
		for _, i := range g {
			keys = append(keys, items[i].key)
			if items[i].usage != "" {
				keys = append(keys, items[i].usage)
			}
			args = append(args, items[i].args[:]...)
		}
		v, err := decideScript.Run(ctx, s.c, keys, args...).Result()
		if err == nil {
			results, err = settleResults(results, v, g, len(settles))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("ratelimit settle: %w", err))
		}
	}
	return results, errors.Join(errs...)
}

// settleResults records the crossings of one settle call's reply, {now,
// then per item: crossed, used}, for the items g (indices below n are
// settlements).
func settleResults(results []SettleResult, v any, g []int, n int) ([]SettleResult, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 1+2*len(g) {
		return results, fmt.Errorf("unexpected reply %T of %d items for %d settlements", v, lenOf(v), len(g))
	}
	for j, i := range g {
		c, ok1 := arr[1+2*j].(int64)
		used, ok2 := arr[2+2*j].(int64)
		if !ok1 || !ok2 || c < 0 || c > 255 {
			return results, fmt.Errorf("unexpected reply items %d-%d: %v %v", 1+2*j, 2+2*j, arr[1+2*j], arr[2+2*j])
		}
		if c == 0 || i >= n {
			continue
		}
		if results == nil {
			results = make([]SettleResult, n)
		}
		results[i] = SettleResult{Crossed: uint8(c), Used: used}
	}
	return results, nil
}

var _ Settler = (*RedisStore)(nil)
