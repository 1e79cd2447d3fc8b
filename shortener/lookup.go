package shortener

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/edgekit/caddy-edgekit/internal/tracing"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// tracerScope names the tracer of the handler's spans.
const tracerScope = "github.com/edgekit/caddy-edgekit/shortener"

// tierNames are the shortener.tier values of the lookup span, by source.
var tierNames = map[string]string{
	sourceLocal:  "l1",
	sourceFilter: "filter",
	sourceRedis:  "redis",
	sourceStore:  "store",
}

// storeTimeout bounds one store call (PostgreSQL also has its own
// statement_timeout).
const storeTimeout = 3 * time.Second

// filteredUnknown is the answer for a code the code filter has never heard
// of: unknown, and never cached (the filter itself is the cache).
var filteredUnknown = &entry{state: stateUnknown}

// lookupResult is what one shared lookup hands to every caller waiting on
// it.
type lookupResult struct {
	e      *entry
	source string
}

// Lookup resolves code through the tiers, in order: L1 (links and unknown
// codes alike), the code filter (a code it has never heard of is unknown
// at once, source sourceFilter), then Redis and the store. The entry says
// what code is: a link, revoked or expired (gone), or unknown. An L1 hit
// and a filter answer allocate nothing.
//
// Concurrent misses of one code share a single call (Redis read and store
// query), detached from any one request's cancellation: ctx only bounds how
// long this caller waits. What the store says is written back to Redis
// (SET NX) and L1, unknown codes as negative entries. A store error is
// returned, never cached.
func (c *cache) Lookup(ctx context.Context, code string) (*entry, string, error) {
	if e, ok := c.local(code); ok {
		return e, sourceLocal, nil
	}
	if !c.codes.mayExist(code) {
		return filteredUnknown, sourceFilter, nil
	}
	ch := c.flight.DoChan(code, func() (any, error) {
		return c.lookupShared(context.WithoutCancel(ctx), code)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, "", res.Err
		}
		lr := res.Val.(lookupResult)
		return lr.e, lr.source, nil
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
}

// LookupTraced is Lookup under a `shortener.lookup` span, a child of the
// request's span, when Caddy's `tracing` handler traces the request;
// otherwise Lookup itself: no span, no allocation. The span tells code,
// the tier that answered and whether the code is unknown (negative) or
// revoked or expired; a lookup error marks it failed.
func (c *cache) LookupTraced(ctx context.Context, code, key string) (*entry, string, error) {
	if !tracing.On(ctx) {
		return c.Lookup(ctx, key)
	}
	ctx, span := tracing.Start(ctx, tracerScope, "shortener.lookup")
	defer span.End()
	span.SetAttributes(attribute.String("shortener.code", code))
	e, source, err := c.Lookup(ctx, key)
	if err != nil {
		tracing.Fail(span, err)
		return e, source, err
	}
	span.SetAttributes(
		attribute.String("shortener.tier", tierNames[source]),
		attribute.Bool("shortener.negative", e.state == stateUnknown),
		attribute.Bool("shortener.revoked", e.gone(c.now().UnixNano())),
	)
	return e, source, nil
}

// lookupShared is the one flight of an L1 miss: Redis, then the store.
func (c *cache) lookupShared(ctx context.Context, code string) (lookupResult, error) {
	// A flight that just ended has filled L1 for requests that missed it
	// a moment ago.
	if e, ok := c.local(code); ok {
		return lookupResult{e, sourceLocal}, nil
	}
	epoch := c.epoch(code)
	var redisErr error
	if c.rdb != nil {
		e, err := c.redisGet(ctx, code, redisTimeout)
		if err == nil && e != nil {
			c.setLocal(code, e, epoch)
			return lookupResult{e, sourceRedis}, nil
		}
		if err != nil {
			redisErr = err
			if ce := c.logger.Check(zapcore.DebugLevel, "redis lookup failed, asking the store"); ce != nil {
				ce.Write(zap.Error(err))
			}
		}
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	l, err := c.store.Get(sctx, code)
	var e *entry
	switch {
	case errors.Is(err, link.ErrNotFound):
		e = c.unknown()
		c.fill(ctx, code, nil)
	case err != nil:
		// The store is down and Redis was only slow: give Redis the time
		// the store did not use rather than fail a cached link.
		if redisErr != nil {
			if e, rerr := c.redisGet(ctx, code, redisRetryTimeout); rerr == nil && e != nil {
				c.setLocal(code, e, epoch)
				return lookupResult{e, sourceRedis}, nil
			}
		}
		return lookupResult{}, err
	default:
		e = c.fromLink(l)
		c.fill(ctx, code, &l)
	}
	c.setLocal(code, e, epoch)
	return lookupResult{e, sourceStore}, nil
}
