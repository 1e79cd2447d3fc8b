package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/usagepool"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Plans reads a zone's quotas per plan from a PostgreSQL table with the
// columns `plan_key` (text), `events` (integer), `window_seconds` (number)
// and `burst` (integer, may be NULL). The table is read at load and again
// every `refresh` in the background, so a changed plan applies without a
// reload, and a request only looks its plan up in memory. A request whose
// plan key is not in the table gets the zone's own quota, as does one
// whose row is invalid or past the bounds of the zone's fields (such rows
// are skipped with a warning at each read). When PostgreSQL fails, the
// last plans read keep applying (and the failure is logged).
type Plans struct {
	// The PostgreSQL connection string, a URL or key=value pairs;
	// `{env.*}` placeholders are expanded once at load. Its password never
	// appears in logs or errors. Required.
	Postgres string `json:"postgres"`

	// The table (optionally `schema.table`). Default: `ratelimit_plans`.
	Table string `json:"table,omitempty"`

	// How often the table is read again. Default: `30s`.
	Refresh caddy.Duration `json:"refresh,omitempty"`

	// A template expanded per request to the plan key looked up in the
	// table, such as `{http.request.header.X-Plan}` or a `map` output. A
	// request carrying a header, cookie or query parameter it reads more
	// than once is refused with 400. Default: the zone's `key`, so the
	// table holds a quota per key.
	PlanKey string `json:"plan_key,omitempty"`
}

// Plan defaults.
const (
	DefaultPlansTable   = "ratelimit_plans"
	DefaultPlansRefresh = 30 * time.Second

	// plansLoadTimeout bounds one read of the plans table.
	plansLoadTimeout = 5 * time.Second
)

var planTableRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// parsePlans reads `plans postgres <dsn> { table <name>; refresh <interval>;
// plan_key <template> }` at the dispenser's `plans` token.
func parsePlans(d *caddyfile.Dispenser) (*Plans, error) {
	args := d.RemainingArgs()
	if len(args) != 2 {
		return nil, d.ArgErr()
	}
	if args[0] != "postgres" {
		return nil, d.Errf("unknown plans source '%s': must be postgres", args[0])
	}
	p := &Plans{Postgres: args[1]}
	if err := plansBlock.Parse(d, p); err != nil {
		return nil, err
	}
	return p, nil
}

// plansBlock is the subdirectives of `plans postgres <dsn> { ... }`.
var plansBlock = cfparse.Block[Plans]{
	Prefix: func(*Plans) string { return "plans: " },
	Subdirectives: cfparse.Table[Plans]{
		"table":    (*Plans).unmarshalTable,
		"refresh":  (*Plans).unmarshalRefresh,
		"plan_key": (*Plans).unmarshalPlanKey,
	},
}

// unmarshalTable reads `table <name>`.
func (p *Plans) unmarshalTable(d *caddyfile.Dispenser) (err error) {
	p.Table, err = cfparse.OneArg(d)
	return err
}

// unmarshalRefresh reads `refresh <interval>`.
func (p *Plans) unmarshalRefresh(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	p.Refresh = caddy.Duration(dur)
	return err
}

// unmarshalPlanKey reads `plan_key <template>`.
func (p *Plans) unmarshalPlanKey(d *caddyfile.Dispenser) (err error) {
	p.PlanKey, err = cfparse.OneArg(d)
	return err
}

// plan is one row of the plans table, as a zone applies it.
type plan struct {
	events int64
	window time.Duration
	burst  int64
	cal    *planCalendar // a calendar period instead of window (see plans_calendar.go)
}

// planTable is one read of the plans table: immutable once published.
type planTable struct {
	byKey map[string]plan
	// skipped: the keys of rows with an invalid quota or one past the
	// bounds, so that a request naming one is counted (and gets the
	// zone's own quota).
	skipped map[string]struct{}
	loaded  time.Time
}

// planLoader holds the plans of one table, read at start and every
// refresh in the background. Loaders are shared through a UsagePool by
// every zone and every config that reads the same table with the same
// refresh: a reload keeps the plans already read, even while PostgreSQL
// is down.
type planLoader struct {
	pool      *pgpool.Pool
	ident     string // the table, sanitized
	name      string // redacted DSN and table, for logs
	refresh   time.Duration
	algorithm string // of the zones reading it: the bounds of a row depend on it
	logger    *zap.Logger

	table  atomic.Pointer[planTable]
	loads  atomic.Int64 // successful reads, for tests and the admin API
	fails  atomic.Int64 // failed reads in a row
	cancel context.CancelFunc
	done   chan struct{}
}

var planLoaders = usagepool.New((*planLoader).Destruct)

// planHandle is one zone's use of a shared loader; release it in Cleanup.
type planHandle struct {
	*planLoader
	use *usagepool.Handle[*planLoader]
}

func (h *planHandle) release() error {
	if h == nil {
		return nil
	}
	return h.use.Release()
}

// Destruct stops the refresh and releases the PostgreSQL pool.
func (l *planLoader) Destruct() error {
	l.cancel()
	<-l.done
	return l.pool.Release()
}

// loadPlans returns the shared loader of p (placeholders of the DSN
// expanded) for zones of algorithm. A new loader reads the table once
// before returning; when that fails the error is logged and the zone's own
// quota applies until a refresh succeeds.
func loadPlans(p *Plans, algorithm string, logger *zap.Logger) (*planHandle, error) {
	dsn := caddy.NewReplacer().ReplaceKnown(p.Postgres, "")
	table := p.Table
	if table == "" {
		table = DefaultPlansTable
	}
	refresh := time.Duration(p.Refresh)
	if refresh <= 0 {
		refresh = DefaultPlansRefresh
	}
	sum := sha256.Sum256([]byte(dsn + "\x00" + table + "\x00" + refresh.String() + "\x00" + algorithm))
	key := hex.EncodeToString(sum[:])
	l, use, err := planLoaders.LoadOrNew(key, func() (*planLoader, error) {
		pool, err := pgpool.Get(dsn, pgpool.Settings{
			ApplicationName:  "caddy-edgekit-ratelimit",
			StatementTimeout: plansLoadTimeout,
		})
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		l := &planLoader{
			pool:      pool,
			ident:     pgx.Identifier(strings.Split(table, ".")).Sanitize(),
			name:      pgpool.Redact(dsn) + " table " + table,
			refresh:   refresh,
			algorithm: algorithm,
			logger:    logger,
			cancel:    cancel,
			done:      make(chan struct{}),
		}
		l.table.Store(&planTable{byKey: map[string]plan{}, skipped: map[string]struct{}{}})
		if err := l.load(ctx); err != nil {
			logger.Warn("rate limit plans not loaded; zone quotas apply until a refresh succeeds",
				zap.String("plans", l.name), zap.Error(err))
		}
		go l.run(ctx)
		return l, nil
	})
	if err != nil {
		return nil, err
	}
	return &planHandle{planLoader: l, use: use}, nil
}

// run reads the table every refresh until ctx ends.
func (l *planLoader) run(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(l.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := l.load(ctx); err != nil && ctx.Err() == nil {
			l.logger.Warn("rate limit plans refresh failed; the last plans read keep applying",
				zap.String("plans", l.name), zap.Int64("failures", l.fails.Load()), zap.Error(err))
		}
	}
}

// load reads the whole table and publishes it. Rows with an invalid quota
// or one past the bounds are skipped and logged (the first one's reason,
// never its key); a failed read keeps the published table.
func (l *planLoader) load(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, plansLoadTimeout)
	defer cancel()
	t, skipped, why, err := l.read(ctx)
	if err != nil {
		l.fails.Add(1)
		return err
	}
	l.fails.Store(0)
	l.table.Store(t)
	l.loads.Add(1)
	if skipped > 0 {
		l.logger.Warn("rate limit plans: rows with an invalid quota skipped; their keys get the zone's own quota",
			zap.String("plans", l.name), zap.String("algorithm", l.algorithm),
			zap.Int("skipped", skipped), zap.NamedError("first", why))
	}
	return nil
}

// read reads the table: the plans, how many rows were skipped and why the
// first was.
func (l *planLoader) read(ctx context.Context) (*planTable, int, error, error) {
	cols, err := l.columns(ctx)
	if err != nil {
		return nil, 0, nil, err
	}
	rows, err := l.pool.Query(ctx, plansQuery(l.ident, cols))
	if err != nil {
		return nil, 0, nil, fmt.Errorf("reading plans: %w", err)
	}
	defer rows.Close()
	t := &planTable{byKey: map[string]plan{}, skipped: map[string]struct{}{}, loaded: time.Now()}
	var why error
	for rows.Next() {
		var (
			key           string
			events, burst int64
			seconds       float64
			calendar, tz  *string
		)
		if err := rows.Scan(&key, &events, &seconds, &burst, &calendar, &tz); err != nil {
			return nil, 0, nil, fmt.Errorf("reading plans: %w", err)
		}
		p, err := planOf(l.algorithm, events, seconds, burst, calendar, tz)
		if err != nil {
			t.skipped[key] = struct{}{}
			if why == nil {
				why = err
			}
			continue
		}
		t.byKey[key] = p
	}
	if err := rows.Err(); err != nil {
		return nil, 0, nil, fmt.Errorf("reading plans: %w", err)
	}
	return t, len(t.skipped), why, nil
}

// planOf is the plan of one row for zones of algorithm; an error when its
// quota is invalid or past the bounds (see limiter.CheckLimit): the row is skipped.
func planOf(algorithm string, events int64, seconds float64, burst int64, calendar, tz *string) (plan, error) {
	cal, err := calendarOf(algorithm, calendar, tz)
	if err != nil {
		return plan{}, err
	}
	if cal != nil {
		seconds = cal.unit.Nominal().Seconds()
	}
	if !(seconds >= 0.001 && seconds <= limiter.MaxWindow.Seconds()) { // NaN too
		return plan{}, fmt.Errorf("window_seconds %v: must be at least 0.001 and at most %v (10 years)", seconds, limiter.MaxWindow.Seconds())
	}
	p := plan{events: events, window: time.Duration(math.Round(seconds * float64(time.Second))), burst: burst, cal: cal}
	if err := limiter.CheckLimit(limiter.Limit{Algorithm: algorithm, Events: p.events, Window: p.window, Burst: p.burst}); err != nil {
		return plan{}, err
	}
	return p, nil
}

// lookup returns the plan of key, if the table has a valid one.
func (l *planLoader) lookup(key string) (p plan, ok bool) {
	p, ok, _ = l.lookupRow(key)
	return p, ok
}

// lookupRow is lookup, and whether key names a row skipped at load.
func (l *planLoader) lookupRow(key string) (p plan, ok, skipped bool) {
	t := l.table.Load()
	if p, ok = t.byKey[key]; ok {
		return p, true, false
	}
	_, skipped = t.skipped[key]
	return p, false, skipped
}

var _ caddy.Destructor = (*planLoader)(nil)
