package clicks

import (
	"context"
	"log/slog"
	"strconv"
	"time"
)

// maxPipeline bounds the batches one flush carries (a backlog after an
// outage is sent in pipelines of this many).
const maxPipeline = 16

// write is the writer goroutine: it sleeps until the buffer holds a batch
// (Record wakes it) or its interval passes, then takes the buffered
// clicks in batches and delivers them, retrying with backoff until they
// are accepted. A partial batch leaves when the interval passes.
func (r *Recorder) write() {
	defer close(r.flushed)
	if r.Geo != nil {
		defer r.Geo.close() // after the last lookup
	}
	n := r.Cfg.BatchSize
	ticker := time.NewTicker(r.Cfg.BatchInterval)
	defer ticker.Stop()
	for {
		partial := false // the interval passed: a partial batch leaves too
		select {
		case <-r.full:
		case <-ticker.C:
			partial = true
		case <-r.stop:
			r.final()
			r.report()
			return
		}
		r.report()
		for {
			// Whole batches already waiting, up to one pipeline, then the
			// rest as a partial batch if the interval passed.
			var batches []Batch
			for len(batches) < maxPipeline && len(r.ch) >= n {
				batches = append(batches, r.take(n))
			}
			if partial && len(batches) < maxPipeline {
				if b := r.take(n); len(b.Clicks) > 0 {
					batches = append(batches, b)
				}
			}
			if len(batches) == 0 {
				break
			}
			if !r.deliver(batches) {
				r.lose(batches)
				return
			}
			if len(r.ch) < n {
				break // what is left waits for the next wake-up
			}
		}
	}
}

// final drains the buffer at Close and delivers everything.
func (r *Recorder) final() {
	for {
		var batches []Batch
		for len(batches) < maxPipeline {
			b := r.take(r.Cfg.BatchSize)
			if len(b.Clicks) == 0 {
				break
			}
			batches = append(batches, b)
		}
		if len(batches) == 0 {
			return
		}
		if !r.deliver(batches) {
			r.lose(batches)
			return
		}
	}
}

// take returns a batch of up to n buffered clicks, at most MaxBatchBytes
// of them encoded, without waiting: each derived (its dimensions set, its
// address and user agent cleared) as it leaves the buffer, so nothing
// after this point sees them. The batch remembers the bytes its clicks
// were held for.
func (r *Recorder) take(n int) Batch {
	var b Batch
	var size int64
	for len(b.Clicks) < n && size <= MaxBatchBytes-MaxClickSize {
		select {
		case c := <-r.ch:
			if b.Clicks == nil {
				b.Clicks = make([]Click, 0, min(n, 1024))
			}
			b.held += heldBytes(c)
			r.Derive(&c)
			b.Clicks = append(b.Clicks, c)
			size += WireBytes(c)
		default:
			return r.seal(b)
		}
	}
	return r.seal(b)
}

// report moves the gauges by what changed since its last call: the clicks
// held in process (buffered and in the writer's batches) and their bytes.
// Called by the writer only, at each wake-up and flush.
func (r *Recorder) report() {
	held, bytes := int64(len(r.ch)+r.flying), r.bytes.Load()
	r.metrics.buffered.Add(float64(held - r.gauges[0]))
	r.metrics.bufferedBytes.Add(float64(bytes - r.gauges[1]))
	r.gauges = [2]int64{held, bytes}
}

// Buffered returns the clicks this recorder holds (buffered or being
// flushed) and their bytes: what a crash would lose.
func (r *Recorder) Buffered() (clicks int, bytes int64) {
	return len(r.ch), r.bytes.Load()
}

// lose counts the given batches and everything still buffered as dropped:
// Close gave up on them.
func (r *Recorder) lose(batches []Batch) {
	var n int
	var size int64
	for _, b := range batches {
		n += len(b.Clicks)
		size += b.held
	}
	for b := r.take(4096); len(b.Clicks) > 0; b = r.take(4096) {
		n += len(b.Clicks)
		size += b.held
	}
	r.bytes.Add(-size)
	r.report()
	r.lost.Add(int64(n))
	r.drop(dropShutdown, n)
	r.logger.Error("clicks lost at shutdown: could not flush before the deadline", slog.Int("clicks", n))
}

// seal names a batch; an empty one keeps no ID (it is not sent).
func (r *Recorder) seal(b Batch) Batch {
	if len(b.Clicks) > 0 {
		b.ID = r.Cfg.InstanceID + "-" + strconv.FormatUint(r.seq.Add(1), 10)
	}
	return b
}

// deliver sends batches until accepted; false only when Close gave up
// (the caller then counts them lost). Until then they count as held.
func (r *Recorder) deliver(batches []Batch) bool {
	var n int
	var size int64
	for _, b := range batches {
		n += len(b.Clicks)
		size += b.held
	}
	r.flying += n
	r.lag.sending.Store(oldestClick(batches))
	span := r.flushSpan(len(batches), n) // nil unless traced clicks wait
	ok := r.send(batches)
	if span != nil {
		endFlush(span, ok)
	}
	r.lag.sending.Store(0)
	r.flying -= n
	if ok {
		r.bytes.Add(-size)
		r.report()
	}
	return ok
}

// send sends batches until accepted, retrying with backoff.
func (r *Recorder) send(batches []Batch) bool {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
		var err error
		if r.Cfg.Redis != nil {
			err = r.xadd(ctx, batches)
		} else {
			var applied int
			applied, err = r.Cfg.Sink.ApplyClicks(ctx, batches)
			if err == nil {
				r.Replayed.Add(int64(len(batches) - applied))
			}
		}
		cancel()
		if err == nil {
			return true
		}
		if r.ctx.Err() != nil {
			return false
		}
		r.report() // the buffer fills during an outage: keep the gauges current
		if attempt == 1 || attempt%20 == 0 {
			r.logger.Warn("click flush failed; retrying (clicks stay buffered)",
				slog.Int("batches", len(batches)), slog.Int("attempt", attempt), slog.Any("error", err))
		}
		select {
		case <-time.After(backoff):
		case <-r.ctx.Done():
			return false
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}
