package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// The global brake: a factor 0.001 <= f <= 1 that multiplies every quota of
// every handler sharing a store (f = 0.1 cuts everyone to 10% while a
// backend recovers). It lives in Redis at `<key_prefix>:brake` with a TTL,
// or in the process for handlers with the in-process store, and is set and
// cleared through the admin API. Each handler caches it and reads it again
// every brakeRefresh in the background, so a request reads one atomic
// value and a change reaches every instance within a second.

// brakeRefresh is how often a handler reads the brake again; a change
// applies within brakeRefresh plus one read.
const brakeRefresh = 500 * time.Millisecond

// DefaultBrakeTTL is how long a brake set without a TTL lasts.
const DefaultBrakeTTL = 10 * time.Minute

// brakeReadTimeout bounds one read of the brake.
const brakeReadTimeout = 250 * time.Millisecond

// The bounds of a brake. A factor below MinBrakeFactor is no brake but
// an outage (and it would stretch a leaky bucket's queue past the
// stores' bounds); a brake is a measure for an incident, and one
// forgotten must lift itself: past MaxBrakeTTL, set it again.
const (
	MinBrakeFactor = 0.001
	MaxBrakeTTL    = 24 * time.Hour
)

// checkBrake validates a brake factor and TTL; the error names the field
// (the admin API's JSON field) and the bounds.
func checkBrake(f float64, ttl time.Duration) error {
	if !(f >= MinBrakeFactor && f <= 1) { // also refuses NaN
		return fmt.Errorf("invalid brake factor %v: must be at least %v and at most 1", f, MinBrakeFactor)
	}
	if ttl <= 0 || ttl > MaxBrakeTTL {
		return fmt.Errorf("invalid brake ttl %s: must be positive and at most %s", ttl, MaxBrakeTTL)
	}
	return nil
}

// brakeStore is where a brake lives.
type brakeStore interface {
	// get returns the factor in force (1: none).
	get(ctx context.Context) (float64, error)
	set(ctx context.Context, f float64, ttl time.Duration) error
	clear(ctx context.Context) error
}

// redisBrake is the brake of handlers sharing one Redis and key prefix.
type redisBrake struct {
	c   redis.UniversalClient
	key string // <prefix>:brake
}

func newRedisBrake(c redis.UniversalClient, prefix string) *redisBrake {
	return &redisBrake{c: c, key: prefix + ":brake"}
}

func (b *redisBrake) get(ctx context.Context) (float64, error) {
	v, err := b.c.Get(ctx, b.key).Result()
	if errors.Is(err, redis.Nil) {
		return 1, nil
	}
	if err != nil {
		return 1, fmt.Errorf("reading brake: %w", err)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || checkBrake(f, 1) != nil {
		return 1, fmt.Errorf("invalid brake %q in %s: ignored", v, b.key)
	}
	return f, nil
}

func (b *redisBrake) set(ctx context.Context, f float64, ttl time.Duration) error {
	if err := b.c.Set(ctx, b.key, strconv.FormatFloat(f, 'g', -1, 64), ttl).Err(); err != nil {
		return fmt.Errorf("setting brake: %w", err)
	}
	return nil
}

func (b *redisBrake) clear(ctx context.Context) error {
	if err := b.c.Del(ctx, b.key).Err(); err != nil {
		return fmt.Errorf("clearing brake: %w", err)
	}
	return nil
}

// processBrake is the brake of every handler with the in-process store.
var processBrake = &memoryBrake{now: time.Now}

type memoryBrake struct {
	now    func() time.Time
	mu     sync.Mutex
	factor float64
	until  time.Time
}

func (b *memoryBrake) get(ctx context.Context) (float64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.factor == 0 || !b.now().Before(b.until) {
		return 1, nil
	}
	return b.factor, nil
}

func (b *memoryBrake) set(ctx context.Context, f float64, ttl time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.factor, b.until = f, b.now().Add(ttl)
	return nil
}

func (b *memoryBrake) clear(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.factor = 0
	return nil
}

// brakeCache is one handler's copy of the brake, read on every request
// without a lock and refreshed in the background.
type brakeCache struct {
	store  brakeStore
	logger *zap.Logger

	bits    atomic.Uint64 // math.Float64bits(factor); 0 means 1 (no brake)
	failed  atomic.Bool   // the last read failed (logged once per outage)
	stop    chan struct{}
	closing sync.Once // closes stop
	done    chan struct{}
}

// newBrakeCache reads the brake of store once and refreshes it every
// brakeRefresh until close.
func newBrakeCache(ctx context.Context, store brakeStore, logger *zap.Logger) *brakeCache {
	b := &brakeCache{store: store, logger: logger, stop: make(chan struct{}), done: make(chan struct{})}
	b.refresh(ctx)
	go b.run()
	return b
}

// factor is the brake in force: 1 when none.
func (b *brakeCache) factor() float64 {
	if b == nil {
		return 1
	}
	bits := b.bits.Load()
	if bits == 0 {
		return 1
	}
	return math.Float64frombits(bits)
}

func (b *brakeCache) run() {
	defer close(b.done)
	t := time.NewTicker(brakeRefresh)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.refresh(context.Background())
		}
	}
}

// refresh reads the brake; a failed read keeps the factor in force.
func (b *brakeCache) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, brakeReadTimeout)
	defer cancel()
	f, err := b.store.get(ctx)
	if err != nil {
		if !b.failed.Swap(true) {
			b.logger.Warn("rate limit brake unreadable; the last factor read keeps applying",
				zap.Float64("factor", b.factor()), zap.Error(err))
		}
		return
	}
	b.failed.Store(false)
	var bits uint64
	if f < 1 {
		bits = math.Float64bits(f)
	}
	if old := b.bits.Swap(bits); old != bits {
		b.logger.Info("rate limit brake changed", zap.Float64("factor", f))
		updateBrakeGauge()
	}
}

// close stops the refresh; closing again does nothing.
func (b *brakeCache) close() {
	if b == nil {
		return
	}
	b.closing.Do(func() { close(b.stop) })
	<-b.done
}

// brakeGauge is caddy_ratelimit_brake_factor: the lowest brake factor any
// loaded handler applies (1: none).
var brakeGauge = prometheus.NewGauge(prometheus.GaugeOpts{
	Namespace: "caddy",
	Subsystem: "ratelimit",
	Name:      "brake_factor",
	Help:      "The global brake factor applied to rate limit quotas (the lowest among loaded handlers; 1 = none).",
})

func init() { brakeGauge.Set(1) }

// registerBrakeGauge registers the gauge on a config's registry.
func registerBrakeGauge(registry *prometheus.Registry) error {
	if registry == nil {
		return nil
	}
	if err := registry.Register(brakeGauge); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) || are.ExistingCollector != brakeGauge {
			return err
		}
	}
	return nil
}

// updateBrakeGauge sets the gauge from the loaded handlers.
func updateBrakeGauge() {
	lowest := 1.0
	for _, e := range loadedHandlers() {
		lowest = min(lowest, e.brake.factor())
	}
	brakeGauge.Set(lowest)
}

// braked is l under the brake factor f (MinBrakeFactor <= f < 1): the quota and the
// token bucket's capacity become ⌈n·f⌉, at least 1. The window, and the
// leaky bucket's queue, are unchanged.
func braked(l limiter.Limit, f float64) limiter.Limit {
	l.Events = brakeUnits(l.Events, f)
	if l.BucketBurst() {
		l.Burst = brakeUnits(l.Burst, f)
	}
	return l
}

// brakeUnits is ⌈n·f⌉, at least 1; the epsilon keeps 0.7·100 at 70.
func brakeUnits(n int64, f float64) int64 {
	return max(int64(math.Ceil(float64(n)*f-1e-9)), 1)
}
