package clicks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// consume runs this instance's consumer in the shared group until Close.
func (r *Recorder) consume() {
	defer close(r.consumed)
	st := &consumerState{
		consumer:   r.Cfg.InstanceID,
		block:      min(r.Cfg.BatchInterval, time.Second),
		ownPending: true,
	}
	defer r.leaveGroup(st.consumer)
	backoff := 50 * time.Millisecond
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		err := r.consumeOnce(st)
		if errors.Is(err, errConsumerKilled) {
			r.killed = true
			return
		}
		if err == nil {
			backoff = 50 * time.Millisecond
			continue
		}
		if r.ctx.Err() != nil {
			return
		}
		if strings.Contains(err.Error(), "NOGROUP") {
			st.groupReady = false // Redis lost the stream (restart without persistence)
		}
		st.ownPending = true
		r.logger.Warn("click consumer failed; retrying", slog.Any("error", err))
		select {
		case <-time.After(backoff):
		case <-r.stop:
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// consumerState is what the consumer carries from one round to the next.
type consumerState struct {
	consumer   string
	block      time.Duration // longest wait of one XREADGROUP
	ownPending bool          // read our own pending entries first ("0"), then new ones (">")
	groupReady bool
	lastClaim  time.Time
	lastSample time.Time // of the stream's length and lag (sampleStream)
}

// consumeOnce is one round of the consumer: it creates the group if
// needed, samples the stream for the lag metrics and claims entries of
// dead consumers when due, then reads and applies one pipeline of entries.
func (r *Recorder) consumeOnce(st *consumerState) error {
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	if !st.groupReady {
		err := r.Cfg.Redis.XGroupCreateMkStream(ctx, r.Stream, r.group, "0").Err()
		if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
			return fmt.Errorf("creating consumer group: %w", err)
		}
		st.groupReady = true
	}
	if time.Since(st.lastSample) >= r.Cfg.StreamSample {
		// A failed sample keeps the last one; it never stops the counting.
		_ = r.sampleStream(ctx)
		st.lastSample = time.Now()
	}
	if time.Since(st.lastClaim) >= r.Cfg.ClaimMinIdle/2 {
		if err := r.claim(ctx, st.consumer); err != nil {
			return err
		}
		st.lastClaim = time.Now()
	}
	start := ">"
	if st.ownPending {
		start = "0"
	}
	res, err := r.Cfg.Redis.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group:    r.group,
		Consumer: st.consumer,
		Streams:  []string{r.Stream, start},
		Count:    maxPipeline,
		Block:    st.block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading clicks: %w", err)
	}
	var msgs []redis.XMessage
	for _, s := range res {
		msgs = append(msgs, s.Messages...)
	}
	if st.ownPending && len(msgs) == 0 {
		st.ownPending = false
		return nil
	}
	return r.apply(ctx, msgs)
}

var errConsumerKilled = errors.New("consumer killed by test hook")

// leaveGroup removes this consumer from the group when it stops with
// nothing pending, so reloads do not pile up consumers. With entries still
// pending it stays: another instance claims them.
func (r *Recorder) leaveGroup(consumer string) {
	if r.killed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pending, err := r.Cfg.Redis.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: r.Stream, Group: r.group, Consumer: consumer, Start: "-", End: "+", Count: 1,
	}).Result()
	if err != nil || len(pending) > 0 {
		return
	}
	_ = r.Cfg.Redis.XGroupDelConsumer(ctx, r.Stream, r.group, consumer).Err()
}

// claim takes over entries left pending by dead consumers and applies them.
func (r *Recorder) claim(ctx context.Context, consumer string) error {
	start := "0-0"
	for {
		msgs, next, err := r.Cfg.Redis.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream:   r.Stream,
			Group:    r.group,
			MinIdle:  r.Cfg.ClaimMinIdle,
			Start:    start,
			Count:    maxPipeline,
			Consumer: consumer,
		}).Result()
		if err != nil {
			return fmt.Errorf("claiming pending clicks: %w", err)
		}
		if len(msgs) > 0 {
			if err := r.apply(ctx, msgs); err != nil {
				return err
			}
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
}

// apply counts stream entries in the sink (one transaction, idempotent by
// batch ID) and then acknowledges and deletes them.
func (r *Recorder) apply(ctx context.Context, msgs []redis.XMessage) error {
	ids := make([]string, 0, len(msgs))
	batches := make([]Batch, 0, len(msgs))
	for _, m := range msgs {
		ids = append(ids, m.ID)
		if m.Values == nil {
			continue // trimmed away while pending: counted by the trimming writer
		}
		id, _ := m.Values[FieldBatch].(string)
		data, _ := m.Values[FieldClicks].(string)
		clicks, err := DecodeClicks(data)
		if id == "" || len(id) > maxBatchIDLen || err != nil {
			n, nerr := strconv.Atoi(fmt.Sprint(m.Values[FieldCount]))
			if nerr != nil || n < 0 || n > MaxBatchBytes {
				n = strings.Count(data, "\n") // an entry of an older version
			}
			r.drop(DropMalformed, n)
			r.logger.Error("skipping malformed click stream entry", slog.String("entry", m.ID), slog.Int("clicks", n), slog.Any("error", err))
			continue
		}
		batches = append(batches, Batch{ID: id, Clicks: clicks})
	}
	if len(batches) > 0 {
		if h := r.Cfg.CrashBeforeApply; h != nil && h(batches) {
			return errConsumerKilled
		}
		applied, err := r.Cfg.Sink.ApplyClicks(ctx, batches)
		if err != nil {
			return fmt.Errorf("applying clicks: %w", err)
		}
		r.Replayed.Add(int64(len(batches) - applied))
		if h := r.Cfg.CrashAfterApply; h != nil && h(batches) {
			return errConsumerKilled
		}
	}
	_, err := r.Cfg.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, r.Stream, r.group, ids...)
		p.XDel(ctx, r.Stream, ids...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("acknowledging clicks: %w", err)
	}
	return nil
}
