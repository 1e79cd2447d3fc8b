package limiter

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/decide.lua
var decideMain string

//go:embed scripts/concurrency.lua
var concurrencyLua string

//go:embed scripts/absorb.lua
var absorbLua string

//go:embed scripts/bans.lua
var bansLua string

//go:embed scripts/settle.lua
var settleLua string

//go:embed scripts/windows.lua
var windowsLua string

//go:embed scripts/usage.lua
var usageLua string

// decideBody is decide.lua with its sections kept in files of their own
// included where it names them: the library, without its entry point.
var decideBody = includeLua(includeLua(includeLua(includeLua(includeLua(includeLua(decideMain,
	"usage.lua", usageLua),
	"windows.lua", windowsLua),
	"concurrency.lua", concurrencyLua),
	"absorb.lua", absorbLua),
	"bans.lua", bansLua),
	"settle.lua", settleLua)

// decideLua is decide.lua run as a script: main of each call. Redis < 5
// replicates scripts verbatim, which TIME forbids (later: a no-op).
var decideLua = includeLua(decideBody, "entry", `if redis.replicate_commands then
  redis.replicate_commands()
end
return main(KEYS, ARGV)`)

// includeLua replaces the line "-- #include <name>" of script with text,
// set apart by blank lines.
func includeLua(script, name, text string) string {
	marker := "-- #include " + name + "\n"
	if !strings.Contains(script, marker) {
		panic("decide.lua does not include " + name)
	}
	return strings.Replace(script, marker, "\n"+text+"\n", 1)
}

// decideScript decides (and charges, or refunds) every zone of one request
// in one atomic call; run with EVALSHA, EVAL on NOSCRIPT.
var decideScript = redis.NewScript(decideLua)

// refundTimeout bounds the refund of slots already charged when another
// slot refused (Redis Cluster across slots). It is detached from the
// request's deadline: a charge must not stay behind because the request's
// short store timeout ran out.
const refundTimeout = time.Second

// RedisStore is the Store on Redis: every decision is one call of an
// embedded Lua script that reads Redis TIME, so any number of Caddy
// instances sharing the Redis agree exactly.
//
// On Redis Cluster the asks of one request are grouped by hash slot: one
// slot is one atomic call; several slots are one call per slot, sent
// concurrently, and when any slot refuses the slots that charged are
// refunded, so no zone stays charged. Between the charge and the refund
// another request may briefly see the charged units: strict atomicity
// across zones on Cluster needs hash_tag, which puts all of a request's
// keys in one slot (see StoreKey).
//
// The script calls of concurrent requests leave in pipelines (see
// coalescer): under load, one round trip decides many requests.
type RedisStore struct {
	// clock: this process's clock, around which the period boundaries of
	// calendar asks are computed (nil: time.Now; tests set it).
	clock func() time.Time
	c     redis.UniversalClient
	co    *coalescer
	rel   *releaser // concurrency leases given back
}

// NewRedisStore returns a store deciding on c (a Client, a failover client
// or a ClusterClient).
func NewRedisStore(c redis.UniversalClient) *RedisStore {
	s := &RedisStore{c: c, co: newCoalescer(c)}
	s.rel = &releaser{send: s.releaseNow}
	return s
}

// eval decides one request: keys and args are its part of the script's
// KEYS and ARGV (see scriptArgs), bounded by ctx and by timeout from the
// send of its batch (unless zero). It returns the Redis TIME (µs) of the
// decision and the request's part of the reply (5 values per ask).
func (s *RedisStore) eval(ctx context.Context, timeout time.Duration, keys []string, args []any) (int64, []any, error) {
	return s.co.run(ctx, timeout, keys, args)
}

// TimeoutStore is a store that bounds a decision by a timeout measured
// from the moment the decision is sent, so that time spent queued in
// process behind other decisions is not charged against it. A request
// then needs no context of its own (a timer and four allocations).
type TimeoutStore interface {
	// DecideWithin is Decide bounded by ctx and by timeout from the send.
	// A decision the process could not send in time (its local queue is
	// full or too slow) fails with ErrOverloaded: nothing was charged.
	DecideWithin(ctx context.Context, timeout time.Duration, asks []Ask) ([]Result, error)
}

// DecideWithin implements TimeoutStore. A request whose keys lie in one
// slot (always, off a cluster) waits for its coalesced call with a pooled
// timer.
func (s *RedisStore) DecideWithin(ctx context.Context, timeout time.Duration, asks []Ask) ([]Result, error) {
	if len(asks) == 0 {
		return nil, nil
	}
	var pbuf [4]params
	ps, err := appendParams(pbuf[:0], asks)
	if err != nil {
		return nil, err
	}
	withCalendar(ps, s.nowUs())
	if groups := s.slotGroups(asks); len(groups) > 1 {
		return s.decideSlots(ctx, timeout, asks, ps, groups)
	}
	now, vals, err := s.co.decideAsks(ctx, timeout, asks, ps)
	if err != nil {
		return nil, fmt.Errorf("ratelimit script: %w", notReady(err))
	}
	return decodeResults(now, vals, len(asks))
}

// Decide implements Store.
func (s *RedisStore) Decide(ctx context.Context, asks []Ask) ([]Result, error) {
	if len(asks) == 0 {
		return nil, nil
	}
	var pbuf [4]params
	ps, err := appendParams(pbuf[:0], asks)
	if err != nil {
		return nil, err
	}
	withCalendar(ps, s.nowUs())
	groups := s.slotGroups(asks)
	if len(groups) == 1 {
		res, _, err := s.decide(ctx, 0, asks, ps)
		return res, err
	}
	return s.decideSlots(ctx, 0, asks, ps, groups)
}

// slotGroups returns the indexes of the asks per Redis Cluster slot, in
// order of first appearance; a single group when not on a cluster.
func (s *RedisStore) slotGroups(asks []Ask) [][]int {
	if _, ok := s.c.(*redis.ClusterClient); !ok || len(asks) == 1 {
		return oneGroup
	}
	idx := make([]int, len(asks))
	for i := range idx {
		idx[i] = i
	}
	groups := groupBySlot(idx, func(i int) string { return asks[i].Key })
	if len(groups) == 1 {
		return oneGroup
	}
	return groups
}

// oneGroup is slotGroups' answer when all asks go in one call (read only).
var oneGroup = [][]int{nil}

// decideSlots decides asks spread over several cluster slots: one call per
// slot, concurrently (each bounded by timeout from its send, unless zero),
// then refunds of the charged slots if any refused.
func (s *RedisStore) decideSlots(ctx context.Context, timeout time.Duration, asks []Ask, ps []params, groups [][]int) ([]Result, error) {
	type outcome struct {
		asks []Ask
		ps   []params
		res  []Result
		now  int64
		err  error
	}
	outs := make([]outcome, len(groups))
	var wg sync.WaitGroup
	for g, idx := range groups {
		o := &outs[g]
		for _, i := range idx {
			o.asks = append(o.asks, asks[i])
			o.ps = append(o.ps, ps[i])
		}
		wg.Go(func() { o.res, o.now, o.err = s.decide(ctx, timeout, o.asks, o.ps) })
	}
	wg.Wait()

	results := make([]Result, len(asks))
	all := true
	var errs []error
	for g, idx := range groups {
		o := &outs[g]
		if o.err != nil {
			errs = append(errs, o.err)
			all = false
			continue
		}
		for j, i := range idx {
			results[i] = o.res[j]
			all = all && o.res[j].Allowed
		}
	}
	if all {
		return results, nil
	}
	// Refund every slot that charged (all of its asks passed).
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refundTimeout)
	defer cancel()
	var mu sync.Mutex
	for g := range outs {
		o := &outs[g]
		if o.err != nil || !allAllowed(o.res) {
			continue
		}
		wg.Go(func() {
			if err := s.refund(rctx, o.asks, o.ps, o.now); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return results, nil
}

func allAllowed(res []Result) bool {
	for _, r := range res {
		if !r.Allowed {
			return false
		}
	}
	return true
}

// decide runs the script on asks that share a slot; it returns the results
// and the Redis TIME (µs) of the decision. A timeout (unless zero) bounds
// it from its send.
func (s *RedisStore) decide(ctx context.Context, timeout time.Duration, asks []Ask, ps []params) ([]Result, int64, error) {
	keys, args := scriptArgs(asks, ps)
	now, vals, err := s.eval(ctx, timeout, keys, args)
	if err != nil {
		return nil, 0, fmt.Errorf("ratelimit script: %w", notReady(err))
	}
	res, err := decodeResults(now, vals, len(asks))
	return res, now, err
}

// refund gives back what a decide call at now (µs) charged for asks.
// Refunds are rare (Redis Cluster, a request refused in another slot):
// sent alone, not coalesced.
func (s *RedisStore) refund(ctx context.Context, asks []Ask, ps []params, now int64) error {
	keys, args := scriptArgs(asks, ps)
	if err := decideScript.Run(ctx, s.c, keys, callArgs("r", strconv.FormatInt(now, 10), args)...).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("ratelimit refund: %w", err)
	}
	return nil
}

// scriptArgs builds one request's part of the script's KEYS and ARGV: its
// keys (each followed by its BanKey when its refusals are counted: the
// script touches only keys it is given), and its number of asks followed
// by five values per ask. A call of
// the script is ARGV[1] (mode), ARGV[2] (refund time), then the parts of
// one or more requests.
func scriptArgs(asks []Ask, ps []params) ([]string, []any) {
	return appendScriptArgs(make([]string, 0, len(asks)), make([]any, 0, 1+5*len(asks)), asks, ps)
}

// callArgs is the ARGV of a script call: mode, refund time, then the
// requests' parts.
func callArgs(mode, at string, parts ...[]any) []any {
	n := 2
	for _, p := range parts {
		n += len(p)
	}
	args := make([]any, 0, n)
	args = append(args, mode, at)
	for _, p := range parts {
		args = append(args, p...)
	}
	return args
}

// appendParams validates and converts asks, appending to ps.
func appendParams(ps []params, asks []Ask) ([]params, error) {
	for i := range asks {
		p, err := paramsOf(asks[i])
		if err != nil {
			return nil, fmt.Errorf("zone key %d: %w", i, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// appendScriptArgs is scriptArgs appending to keys and args.
func appendScriptArgs(keys []string, args []any, asks []Ask, ps []params) ([]string, []any) {
	args = append(args, len(asks))
	for i := range asks {
		keys = append(keys, asks[i].Key)
		p := ps[i]
		if p.code == codeConcurrency {
			args = append(args, p.code, p.events, p.windowUs/1000, p.lease, p.cost)
			continue
		}
		if p.ban.counts() { // the script reads the ban key next (bans.lua)
			keys = append(keys, BanKey(asks[i].Key))
		}
		if p.usage.on() { // then the usage key (usage.lua)
			keys = append(keys, UsageKey(asks[i].Key))
		}
		args = append(args, p.ban.scriptCode(p.code), p.events, p.windowUs/1000, p.burstArg(), p.cost)
	}
	return keys, args
}

// splitReply checks the reply of a call that decided requests with n asks
// in all: {now_us, then 5 values per ask}. It returns now and the values.
func splitReply(v any, n int) (int64, []any, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 1+5*n {
		return 0, nil, fmt.Errorf("unexpected reply %T of %d items for %d asks", v, lenOf(v), n)
	}
	now, ok := arr[0].(int64)
	if !ok {
		return 0, nil, fmt.Errorf("unexpected reply item 0: %T", arr[0])
	}
	return now, arr[1:], nil
}

// decodeReply checks and converts the reply of a call that decided one
// request of n asks.
func decodeReply(v any, n int) ([]Result, int64, error) {
	now, vals, err := splitReply(v, n)
	if err != nil {
		return nil, 0, fmt.Errorf("ratelimit script: %w", err)
	}
	res, err := decodeResults(now, vals, n)
	return res, now, err
}

// decodeResults converts one request's part of the reply: per ask allowed,
// remaining, retry_us, reset_us, delay_us, decided at now (µs). The
// verdict is 0 (refused), 1 (allowed), or a ban's (banInForce, banSet),
// plus verdictFirst for the first refusal of a window (0 or banSet).
func decodeResults(now int64, vals []any, n int) ([]Result, error) {
	if len(vals) != 5*n {
		return nil, fmt.Errorf("ratelimit script: %d reply values for %d asks", len(vals), n)
	}
	var f [5]int64
	results := make([]Result, n)
	for i := range results {
		for j := range f {
			x, ok := vals[5*i+j].(int64)
			if !ok {
				return nil, fmt.Errorf("ratelimit script: unexpected reply item %d: %T", 1+5*i+j, vals[5*i+j])
			}
			f[j] = x
		}
		crossed := f[0] / verdictCrossed // thresholds: see thresholds.go
		f[0] %= verdictCrossed
		first := f[0] == verdictFirst || f[0] == verdictFirst+banSet
		if first {
			f[0] -= verdictFirst
		}
		if f[0] < 0 || f[0] > banSet {
			return nil, fmt.Errorf("ratelimit script: unexpected verdict %d", f[0])
		}
		if crossed < 0 || crossed > 255 || crossed > 0 && f[0] != 1 {
			return nil, fmt.Errorf("ratelimit script: unexpected verdict %d", vals[5*i])
		}
		d := decision{allowed: f[0] == 1, remaining: f[1], retryUs: f[2], resetUs: f[3], delayUs: f[4], first: first}
		if f[0] >= banInForce {
			d.ban = int8(f[0])
		}
		results[i] = d.result(now)
		results[i].Crossed = uint8(crossed)
	}
	return results, nil
}

func lenOf(v any) int {
	if arr, ok := v.([]any); ok {
		return len(arr)
	}
	return 0
}

// absorbChunk bounds the asks of one absorb call, so that a sync of many
// keys never holds Redis in one script for long.
const absorbChunk = 256

// Absorber is a store that takes the local counts of approximate zones
// (see approxTable): the Redis store.
type Absorber interface {
	Absorb(ctx context.Context, asks []Ask) ([]Result, error)
}

// absorb charges every ask its whole cost, even past its quota (the state
// goes into debt that later refills repay), and returns each key's state
// after, as a cost 0 check sees it: Allowed when at least one unit is
// left. The asks are independent: one failing call fails only its own,
// reported by an error (their results are zero).
func (s *RedisStore) Absorb(ctx context.Context, asks []Ask) ([]Result, error) {
	results := make([]Result, len(asks))
	ps, err := appendParams(make([]params, 0, len(asks)), asks)
	if err != nil {
		return nil, err
	}
	withCalendar(ps, s.nowUs())
	var calls [][]int // indexes of the asks of one call
	for _, g := range s.slotGroups(asks) {
		if g == nil { // one group: all asks
			g = make([]int, len(asks))
			for i := range g {
				g[i] = i
			}
		}
		for len(g) > absorbChunk {
			calls = append(calls, g[:absorbChunk])
			g = g[absorbChunk:]
		}
		calls = append(calls, g)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(calls))
	for c, idx := range calls {
		wg.Go(func() {
			keys := make([]string, 0, len(idx))
			args := make([]any, 0, 2+6*len(idx))
			args = append(args, "a", "0")
			for _, i := range idx {
				keys, args = appendScriptArgs(keys, args, asks[i:i+1], ps[i:i+1])
			}
			v, err := decideScript.Run(ctx, s.c, keys, args...).Result()
			if err != nil {
				errs[c] = fmt.Errorf("ratelimit absorb: %w", err)
				return
			}
			now, vals, err := splitReply(v, len(idx))
			if err == nil {
				var res []Result
				if res, err = decodeResults(now, vals, len(idx)); err == nil {
					for j, i := range idx {
						results[i] = res[j]
					}
				}
			}
			errs[c] = err
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// Reset implements Resetter: one DEL per key, so keys in different
// Redis Cluster slots need no shared slot.
func (s *RedisStore) Reset(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if err := s.c.Del(ctx, k).Err(); err != nil {
			return fmt.Errorf("ratelimit reset: %w", err)
		}
	}
	return nil
}

var (
	_ Store        = (*RedisStore)(nil)
	_ Resetter     = (*RedisStore)(nil)
	_ TimeoutStore = (*RedisStore)(nil)
	_ Absorber     = (*RedisStore)(nil)
)
