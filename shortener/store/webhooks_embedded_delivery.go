package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// embeddedMessage is a message's state as stored; its body, written once,
// is in embeddedHookBodies, so that settling an attempt rewrites only
// this.
type embeddedMessage struct {
	ID       string `json:"id"`
	Endpoint string `json:"endpoint"`
	Type     string `json:"type"`
	At       int64  `json:"at"` // Unix µs
	Body     []byte `json:"-"`
	Events   int    `json:"events"`
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
	NextAt   int64  `json:"next_at"`
	Series   int    `json:"series,omitempty"`
	MadeAt   int64  `json:"made_at"`
}

// withBody is the message with its body, as it was given (uncompressed),
// in memory alloc(n) returns (bucket memory lives as long as its
// transaction): newBytes, or webhook.BodyBuffer for the dispatcher.
func (m embeddedMessage) withBody(tx *bolt.Tx, alloc func(n int) []byte) (webhook.Message, error) {
	if b := tx.Bucket(embeddedHookBodies); b != nil {
		var err error
		if m.Body, err = unpackBody(b.Get([]byte(m.ID)), alloc); err != nil {
			return webhook.Message{}, fmt.Errorf("%w (message %s)", err, m.ID)
		}
	}
	return m.message(), nil
}

func newBytes(n int) []byte { return make([]byte, n) }

func (m embeddedMessage) message() webhook.Message {
	return webhook.Message{ID: m.ID, Endpoint: m.Endpoint, Type: m.Type, At: link.FromMicros(m.At), Body: m.Body,
		Events: m.Events, State: webhook.State(m.State), Attempts: m.Attempts, NextAt: link.FromMicros(m.NextAt), Series: m.Series}
}

func messageKey(endpoint, id string) []byte { return append(append([]byte(endpoint), 0), id...) }

func dueKey(endpoint string, nextAt int64, id string) []byte {
	k := binary.BigEndian.AppendUint64(append([]byte(endpoint), 0), uint64(nextAt)^1<<63)
	return append(k, id...)
}

// Lease implements webhook.Store on this process's clock.
func (s *EmbeddedStore) Lease(ctx context.Context, id, owner string, d time.Duration) (webhook.Endpoint, link.EventCursor, bool, error) {
	var e webhook.Endpoint
	var cur link.EventCursor
	var ok bool
	err := s.updateHooks(ctx, func(tx *bolt.Tx) error {
		r, err := readHookEndpoint(tx, id)
		if err != nil {
			return err
		}
		now := link.ToMicros(time.Now())
		if r.LeaseOwner != owner && r.LeaseUntil >= now {
			return nil
		}
		r.LeaseOwner, r.LeaseUntil, ok, cur = owner, now+d.Microseconds(), true, link.EventCursor{Tx: r.CursorTx, Seq: r.Cursor}
		if e, err = r.endpoint(); err != nil {
			return err
		}
		return putHookEndpoint(tx, r)
	})
	return e, cur, ok, err
}

// Release implements webhook.Store.
func (s *EmbeddedStore) Release(ctx context.Context, id, owner string) error {
	return s.updateHooks(ctx, func(tx *bolt.Tx) error {
		r, err := readHookEndpoint(tx, id)
		if errors.Is(err, webhook.ErrNotFound) || err == nil && r.LeaseOwner != owner {
			return nil
		}
		if err != nil {
			return err
		}
		r.LeaseUntil = 0
		return putHookEndpoint(tx, r)
	})
}

// holdEmbeddedLease reads the endpoint if owner holds its lease.
func holdEmbeddedLease(tx *bolt.Tx, id, owner string) (embeddedEndpoint, error) {
	r, err := readHookEndpoint(tx, id)
	if err == nil && (r.LeaseOwner != owner || r.LeaseUntil < link.ToMicros(time.Now())) {
		err = webhook.ErrLeaseLost
	}
	return r, err
}

func putMessage(tx *bolt.Tx, m embeddedMessage) error {
	return tx.Bucket(embeddedHookMessages).Put(messageKey(m.Endpoint, m.ID), appendMessageRecord(make([]byte, 0, 96), m))
}

func readMessage(tx *bolt.Tx, endpoint, id string) (embeddedMessage, error) {
	v := tx.Bucket(embeddedHookMessages).Get(messageKey(endpoint, id))
	if v == nil {
		return embeddedMessage{}, webhook.ErrNoMessage
	}
	return decodeMessageRecord(v)
}

// setState moves a message to state (and, pending, to its due time),
// keeping the due index.
func setState(tx *bolt.Tx, m *embeddedMessage, state string, nextAt int64) error {
	due := tx.Bucket(embeddedHookDue)
	if m.State == string(webhook.StatePending) {
		if err := due.Delete(dueKey(m.Endpoint, m.NextAt, m.ID)); err != nil {
			return err
		}
	}
	m.State, m.NextAt = state, nextAt
	if state == string(webhook.StatePending) {
		if err := due.Put(dueKey(m.Endpoint, nextAt, m.ID), nil); err != nil {
			return err
		}
	}
	return putMessage(tx, *m)
}

// appendOnly fills the pages of the message buckets, whose keys grow with
// time (message ids, due times, attempt numbers), to appendFill for the
// rest of tx, and returns the bodies bucket.
func appendOnly(tx *bolt.Tx) *bolt.Bucket {
	for _, name := range [][]byte{embeddedHookMessages, embeddedHookDue, embeddedHookAttempts} {
		tx.Bucket(name).FillPercent = appendFill
	}
	bodies := tx.Bucket(embeddedHookBodies)
	bodies.FillPercent = appendFill
	return bodies
}

// Enqueue implements webhook.Store.
func (s *EmbeddedStore) Enqueue(ctx context.Context, id, owner string, msgs []webhook.Message, cursor link.EventCursor) error {
	packer := newBodyPacker()
	defer packer.release()
	return s.updateHooks(ctx, func(tx *bolt.Tx) error {
		r, err := holdEmbeddedLease(tx, id, owner)
		if err != nil {
			return err
		}
		now := link.ToMicros(time.Now())
		bodies := appendOnly(tx)
		for _, msg := range msgs {
			m := embeddedMessage{ID: msg.ID, Endpoint: id, Type: msg.Type, At: link.ToMicros(msg.At), Events: msg.Events, MadeAt: now}
			if err := packer.put(bodies, msg.ID, msg.Body); err != nil {
				return err
			}
			if err := setState(tx, &m, string(webhook.StatePending), link.ToMicros(msg.NextAt)); err != nil {
				return err
			}
		}
		r.Cursor, r.CursorTx = cursor.Seq, cursor.Tx
		return putHookEndpoint(tx, r)
	})
}

// Due implements webhook.Store: a walk of the due index.
func (s *EmbeddedStore) Due(ctx context.Context, id string, now time.Time, limit int) ([]webhook.Message, error) {
	limit = min(max(limit, 1), maxMessagePage)
	var out []webhook.Message
	err := s.viewHooks(ctx, func(tx *bolt.Tx) error {
		prefix, end := append([]byte(id), 0), dueKey(id, link.ToMicros(now)+1, "")
		c := tx.Bucket(embeddedHookDue).Cursor()
		for k, _ := c.Seek(prefix); k != nil && len(out) < limit && string(k) < string(end); k, _ = c.Next() {
			m, err := readMessage(tx, id, string(k[len(prefix)+8:]))
			if err != nil {
				return err
			}
			msg, err := m.withBody(tx, webhook.BodyBuffer)
			if err != nil {
				return err
			}
			out = append(out, msg)
		}
		return nil
	})
	return out, err
}

// Settle implements webhook.Store.
func (s *EmbeddedStore) Settle(ctx context.Context, id, owner string, results []webhook.Result, disable string) error {
	return s.updateHooks(ctx, func(tx *bolt.Tx) error {
		r, err := holdEmbeddedLease(tx, id, owner)
		if err != nil {
			return err
		}
		appendOnly(tx)
		for _, res := range results {
			a := res.Attempt
			m, err := readMessage(tx, id, a.Message)
			if err != nil {
				return err
			}
			if err := putAttempt(tx, a); err != nil {
				return err
			}
			m.Attempts = a.N
			if err := setState(tx, &m, string(res.State), link.ToMicros(res.NextAt)); err != nil {
				return err
			}
		}
		if disable == "" {
			return nil
		}
		r.Disabled, r.DisabledReason, r.Version, r.UpdatedAt = true, disable, r.Version+1, link.ToMicros(time.Now())
		return putHookEndpoint(tx, r)
	})
}

// embeddedAttempt is an attempt as stored.
type embeddedAttempt struct {
	At        int64  `json:"at"`
	Status    int    `json:"status"`
	LatencyUS int64  `json:"latency_us"`
	Body      []byte `json:"body,omitempty"`
	Error     string `json:"error,omitempty"`
}

func attemptKey(msgID string, n int) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(msgID), 0), uint64(n))
}

func putAttempt(tx *bolt.Tx, a webhook.AttemptLog) error {
	v := appendAttemptRecord(make([]byte, 0, 32+len(a.Body)+len(a.Error)), embeddedAttempt{At: link.ToMicros(a.At), Status: a.Status,
		LatencyUS: a.Latency.Microseconds(), Body: a.Body, Error: a.Error})
	return tx.Bucket(embeddedHookAttempts).Put(attemptKey(a.Message, a.N), v)
}

// Messages implements webhook.Store: a backward walk of the endpoint's
// messages (ids sort by creation time).
func (s *EmbeddedStore) Messages(ctx context.Context, id string, state webhook.State, before string, limit int) ([]webhook.Message, error) {
	limit = min(max(limit, 1), maxMessagePage)
	var out []webhook.Message
	err := s.viewHooks(ctx, func(tx *bolt.Tx) error {
		prefix := append([]byte(id), 0)
		c := tx.Bucket(embeddedHookMessages).Cursor()
		// Start just before the first key past the range: the endpoint's
		// end, or the message before.
		from := append([]byte(id), 1)
		if before != "" {
			from = messageKey(id, before)
		}
		var k, v []byte
		if sk, _ := c.Seek(from); sk == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && len(out) < limit && len(k) >= len(prefix) && string(k[:len(prefix)]) == string(prefix); k, v = c.Prev() {
			m, err := decodeMessageRecord(v)
			if err != nil {
				return err
			}
			if state == "" || m.State == string(state) {
				msg, err := m.withBody(tx, newBytes)
				if err != nil {
					return err
				}
				out = append(out, msg)
			}
		}
		return nil
	})
	return out, err
}

// Attempts implements webhook.Store.
func (s *EmbeddedStore) Attempts(ctx context.Context, id, msgID string) ([]webhook.AttemptLog, error) {
	out, err := []webhook.AttemptLog(nil), webhook.ErrNoMessage
	_ = s.viewHooks(ctx, func(tx *bolt.Tx) error {
		if _, err = readMessage(tx, id, msgID); err != nil {
			return nil
		}
		prefix := append([]byte(msgID), 0)
		c := tx.Bucket(embeddedHookAttempts).Cursor()
		for k, v := c.Seek(prefix); k != nil && len(k) == len(prefix)+8 && string(k[:len(prefix)]) == string(prefix); k, v = c.Next() {
			var a embeddedAttempt
			if a, err = decodeAttemptRecord(v); err != nil {
				return nil
			}
			out = append(out, webhook.AttemptLog{Message: msgID, N: int(binary.BigEndian.Uint64(k[len(prefix):])),
				At: link.FromMicros(a.At), Status: a.Status, Latency: time.Duration(a.LatencyUS) * time.Microsecond,
				Body: a.Body, Error: a.Error})
		}
		return nil
	})
	return out, err
}

// Replay implements webhook.Store.
func (s *EmbeddedStore) Replay(ctx context.Context, id, msgID string, since, now time.Time) (int, error) {
	n := 0
	err := s.updateHooks(ctx, func(tx *bolt.Tx) error {
		var todo []embeddedMessage
		if msgID != "" {
			m, err := readMessage(tx, id, msgID)
			if err != nil {
				return err
			}
			todo = append(todo, m)
		} else {
			prefix := append([]byte(id), 0)
			c := tx.Bucket(embeddedHookMessages).Cursor()
			for k, v := c.Seek(prefix); k != nil && string(k[:min(len(k), len(prefix))]) == string(prefix); k, v = c.Next() {
				m, err := decodeMessageRecord(v)
				if err != nil {
					return err
				}
				if m.At >= link.ToMicros(since) {
					todo = append(todo, m)
				}
			}
		}
		for _, m := range todo {
			m.Series = m.Attempts
			if err := setState(tx, &m, string(webhook.StatePending), link.ToMicros(now)); err != nil {
				return err
			}
		}
		n = len(todo)
		return nil
	})
	return n, err
}

// Prune implements webhook.Store.
func (s *EmbeddedStore) Prune(ctx context.Context, cutoff time.Time) error {
	cut := link.ToMicros(cutoff)
	return s.updateHooks(ctx, func(tx *bolt.Tx) error {
		msgs := tx.Bucket(embeddedHookMessages)
		var old [][]byte
		var oldIDs []string
		if err := msgs.ForEach(func(k, v []byte) error {
			m, err := decodeMessageRecord(v)
			if err != nil {
				return err
			}
			if m.MadeAt < cut && m.State != string(webhook.StatePending) {
				old, oldIDs = append(old, slices.Clone(k)), append(oldIDs, m.ID)
			}
			return nil
		}); err != nil {
			return err
		}
		for i, k := range old {
			if err := deleteAttempts(tx, oldIDs[i]); err != nil {
				return err
			}
			if err := tx.Bucket(embeddedHookBodies).Delete([]byte(oldIDs[i])); err != nil {
				return err
			}
			if err := msgs.Delete(k); err != nil {
				return err
			}
		}
		return pruneEvents(tx, cut)
	})
}

// pruneEvents deletes the outbox records whose events were all recorded
// before cut (µs).
func pruneEvents(tx *bolt.Tx, cut int64) error {
	b := tx.Bucket(embeddedEvents)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.First() {
		_, newest, err := recordSpan(k, v)
		if err != nil {
			return err
		}
		if newest >= cut {
			return nil
		}
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// recordSpan is the times (µs) of a record's oldest and newest events.
func recordSpan(k, v []byte) (oldest, newest int64, err error) {
	if isClickRecords(v) {
		oldest, newest = recordTimes(v)
		return oldest, newest, nil
	}
	e, err := decodeEvent(k, v, new(eventArena))
	at := link.ToMicros(e.At)
	return at, at, err
}

// Backlog implements webhook.Store: a walk of the due index, the events
// bucket's size and first event.
func (s *EmbeddedStore) Backlog(ctx context.Context) (webhook.Backlog, error) {
	var b webhook.Backlog
	err := s.viewHooks(ctx, func(tx *bolt.Tx) error {
		oldest := int64(0)
		if err := tx.Bucket(embeddedHookDue).ForEach(func(k, _ []byte) error {
			i := bytes.IndexByte(k, 0)
			m, err := readMessage(tx, string(k[:i]), string(k[i+9:]))
			if err != nil {
				return err
			}
			b.Pending++
			if oldest == 0 || m.MadeAt < oldest {
				oldest = m.MadeAt
			}
			return nil
		}); err != nil {
			return err
		}
		if oldest != 0 {
			b.OldestPending = link.FromMicros(oldest)
		}
		return nil
	})
	if err != nil {
		return b, err
	}
	err = s.Db.View(func(tx *bolt.Tx) error {
		if ev := tx.Bucket(embeddedEvents); ev != nil {
			c := ev.Cursor()
			if k, v := c.First(); k != nil {
				oldest, _, err := recordSpan(k, v)
				if err != nil {
					return err
				}
				b.OldestEvent = link.FromMicros(oldest)
				// Numbered without gaps and pruned a record at a time
				// from the oldest: the count is the span (a walk of the
				// bucket would read it all).
				last, lv := c.Last()
				b.Events = keySeq(last) + recordEvents(lv) - keySeq(k)
			}
		}
		return nil
	})
	return b, err
}

var _ webhook.Store = (*EmbeddedStore)(nil)
