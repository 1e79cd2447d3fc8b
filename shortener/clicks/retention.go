package clicks

import (
	"context"
	"log/slog"
	"time"
)

// ClickPruner is a Sink whose rollups can be pruned: both real sinks.
type ClickPruner interface {
	// PruneClicks handles at most limit rollup rows: one page. An hourly
	// counter whose hour is before cut.Hourly (and not before cut.Daily)
	// is added to its link's daily rollup and deleted, in one atomic step;
	// rows dated before cut.Daily (hourly counters, daily rollups and
	// sketches, referrer and dimension rows and days) are deleted. It
	// returns how many rows it deleted and whether the pass is done (no
	// further page needed). All-time totals are never pruned.
	PruneClicks(ctx context.Context, cut ClickCutoffs, limit int) (deleted int, done bool, err error)
}

// ClickCutoffs are the first moments kept (UTC midnights): hourly
// counters from Hourly on, daily rollups and referrers from Daily on.
// Daily is never after Hourly.
type ClickCutoffs struct {
	Hourly, Daily time.Time
	// Today is the start of the current UTC day: visitor salts of the
	// days before it are deleted (zero: none).
	Today time.Time
}

// pruneTimeout bounds one page of pruning.
const pruneTimeout = 30 * time.Second

// prune is the pruner goroutine: PruneDelay after the start, then every
// PruneInterval, it deletes the rollups older than the retention, in
// pages, until Close.
func (r *Recorder) prune(p ClickPruner) {
	defer close(r.pruned)
	timer := time.NewTimer(r.Cfg.PruneDelay)
	defer timer.Stop()
	for first := true; ; first = false {
		select {
		case <-timer.C:
		case <-r.stop:
			return
		}
		r.pruneOnce(p, first)
		timer.Reset(r.Cfg.PruneInterval)
	}
}

// PruneCutoffs are the first moments kept: the start of the UTC day each
// retention reaches back to, so a link keeps at least the retention's
// worth of rollups. Without a retention nothing is deleted (Daily is the
// zero time); without an hourly retention (or with a longer one), hourly
// counters are kept as long as the rest.
func (r *Recorder) PruneCutoffs() ClickCutoffs {
	now := r.Cfg.Now()
	c := ClickCutoffs{Today: DayFloor(now)}
	if r.Cfg.Retention > 0 {
		c.Daily = DayFloor(now.Add(-r.Cfg.Retention))
	}
	c.Hourly = DayFloor(now.Add(-r.Cfg.HourlyRetention))
	if r.Cfg.HourlyRetention == 0 || c.Hourly.Before(c.Daily) {
		c.Hourly = c.Daily
	}
	return c
}

// pruneOnce deletes the rollups older than the cutoff, page by page (each
// page its own statements, so no transaction or lock grows with the
// backlog), and logs what it does: the first run of a recorder at info
// before it starts, the result at info when rows went.
func (r *Recorder) pruneOnce(p ClickPruner, first bool) {
	cut := r.PruneCutoffs()
	fields := []any{slog.String("cutoff", cut.Daily.Format(time.DateOnly)), slog.Duration("retention", r.Cfg.Retention),
		slog.String("hourly_cutoff", cut.Hourly.Format(time.DateOnly)), slog.Duration("hourly_retention", r.Cfg.HourlyRetention)}
	if first {
		r.logger.Info("click retention: rolling hourly counters dated before the hourly cutoff into daily rollups, "+
			"pruning rollups dated before the cutoff (all-time totals stay)", fields...)
	} else {
		r.logger.Debug("click retention: pruning rollups dated before the cutoff", fields...)
	}
	var deleted int
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(r.pruneCtx, pruneTimeout)
		n, done, err := p.PruneClicks(ctx, cut, r.Cfg.PrunePage)
		cancel()
		deleted += n
		if err != nil {
			if r.pruneCtx.Err() == nil {
				r.logger.Warn("click retention: pruning failed; retrying at the next interval",
					append(fields, slog.Int("rows_deleted", deleted), slog.Any("error", err))...)
			}
			return
		}
		if done {
			break
		}
	}
	if deleted > 0 {
		r.logger.Info("click retention: pruned rollups", append(fields, slog.Int("rows_deleted", deleted))...)
	}
}
