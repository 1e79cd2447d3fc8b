// Package pgpool hands out one pgx pool per distinct PostgreSQL DSN, shared
// across handlers and config reloads through internal/usagepool.
package pgpool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgekit/caddy-edgekit/internal/usagepool"
)

// Settings of a pooled connection beyond the DSN.
type Settings struct {
	// ApplicationName shows in pg_stat_activity. Default: "caddy-edgekit".
	ApplicationName string
	// StatementTimeout bounds every statement server-side. Default: 5s.
	StatementTimeout time.Duration
	// ConnectTimeout bounds each new connection. Default: 3s.
	ConnectTimeout time.Duration
}

func (s Settings) withDefaults() Settings {
	if s.ApplicationName == "" {
		s.ApplicationName = "caddy-edgekit"
	}
	if s.StatementTimeout <= 0 {
		s.StatementTimeout = 5 * time.Second
	}
	if s.ConnectTimeout <= 0 {
		s.ConnectTimeout = 3 * time.Second
	}
	return s
}

var pools = usagepool.New(func(p *pgxpool.Pool) error { p.Close(); return nil })

// Pool is a shared pgx pool. Release it in Cleanup.
type Pool struct {
	*pgxpool.Pool
	use *usagepool.Handle[*pgxpool.Pool]
}

// Release gives the pool back; the last release closes it. A second call
// does nothing.
func (p *Pool) Release() error {
	if p == nil {
		return nil
	}
	return p.use.Release()
}

// Get returns the shared pool for dsn (placeholders already expanded). The
// pool is created without connecting; use Ping to check the server.
func Get(dsn string, s Settings) (*Pool, error) {
	s = s.withDefaults()
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d\x00%d", dsn, s.ApplicationName, s.StatementTimeout, s.ConnectTimeout)))
	key := hex.EncodeToString(sum[:])
	p, use, err := pools.LoadOrNew(key, func() (*pgxpool.Pool, error) {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("postgres: invalid dsn %s: %s", Redact(dsn), redactErr(err, dsn))
		}
		cfg.ConnConfig.ConnectTimeout = s.ConnectTimeout
		if cfg.ConnConfig.RuntimeParams == nil {
			cfg.ConnConfig.RuntimeParams = map[string]string{}
		}
		cfg.ConnConfig.RuntimeParams["application_name"] = s.ApplicationName
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(s.StatementTimeout.Milliseconds())
		cfg.HealthCheckPeriod = 5 * time.Second
		p, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			return nil, fmt.Errorf("postgres %s: %s", Redact(dsn), redactErr(err, dsn))
		}
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	return &Pool{Pool: p, use: use}, nil
}

// Ping checks the server answers within timeout; the error hides the password.
func Ping(ctx context.Context, p *Pool, dsn string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := p.Ping(ctx); err != nil {
		return fmt.Errorf("postgres %s: %s", Redact(dsn), redactErr(err, dsn))
	}
	return nil
}
