package shortener

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// clickPruner is a ClickSink whose rollups can be pruned: both real sinks.
type clickPruner interface {
	// PruneClicks deletes at most limit rollup rows older than cutoff (an
	// hourly counter whose hour is before it, a referrer row or referrer
	// day whose day is before it): one page. It returns how many it
	// deleted and whether the pass is done (no further page needed).
	// All-time totals are never pruned.
	PruneClicks(ctx context.Context, cutoff time.Time, limit int) (deleted int, done bool, err error)
}

// pruneTimeout bounds one page of pruning.
const pruneTimeout = 30 * time.Second

// prune is the pruner goroutine: PruneDelay after the start, then every
// PruneInterval, it deletes the rollups older than the retention, in
// pages, until Close.
func (r *ClickRecorder) prune(p clickPruner) {
	defer close(r.pruned)
	timer := time.NewTimer(r.cfg.PruneDelay)
	defer timer.Stop()
	for first := true; ; first = false {
		select {
		case <-timer.C:
		case <-r.stop:
			return
		}
		r.pruneOnce(p, first)
		timer.Reset(r.cfg.PruneInterval)
	}
}

// pruneCutoff is the first moment kept: the start of the UTC day the
// retention reaches back to, so hourly and daily rows are cut alike and a
// link keeps at least the retention's worth of rollups.
func (r *ClickRecorder) pruneCutoff() time.Time {
	return dayFloor(r.cfg.now().Add(-r.cfg.Retention))
}

// pruneOnce deletes the rollups older than the cutoff, page by page (each
// page its own statements, so no transaction or lock grows with the
// backlog), and logs what it does: the first run of a recorder at info
// before it starts, the result at info when rows went.
func (r *ClickRecorder) pruneOnce(p clickPruner, first bool) {
	cutoff := r.pruneCutoff()
	fields := []zap.Field{zap.String("cutoff", cutoff.Format(time.DateOnly)), zap.Duration("retention", r.cfg.Retention)}
	if first {
		r.logger.Info("click retention: pruning hourly and referrer rollups dated before the cutoff (all-time totals stay)", fields...)
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
		n, done, err := p.PruneClicks(ctx, cutoff, r.cfg.PrunePage)
		cancel()
		deleted += n
		if err != nil {
			if r.pruneCtx.Err() == nil {
				r.logger.Warn("click retention: pruning failed; retrying at the next interval",
					append(fields, zap.Int("rows_deleted", deleted), zap.Error(err))...)
			}
			return
		}
		if done {
			break
		}
	}
	if deleted > 0 {
		r.logger.Info("click retention: pruned rollups", append(fields, zap.Int("rows_deleted", deleted))...)
	}
}
