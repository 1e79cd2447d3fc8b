package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// Buckets of webhooks in the embedded file.
var (
	embeddedHookEndpoints = []byte("webhook_endpoints") // id → embeddedEndpoint
	embeddedHookMessages  = []byte("webhook_messages")  // endpoint id, 0, message id → embeddedMessage (its state)
	embeddedHookBodies    = []byte("webhook_bodies")    // message id → the message's body, written once
	embeddedHookDue       = []byte("webhook_due")       // endpoint id, 0, next_at (µs, 8 bytes), message id → nothing: the pending
	embeddedHookAttempts  = []byte("webhook_attempts")  // message id, 0, n (8 bytes) → embeddedAttempt
)

// embeddedEndpoint is an endpoint as stored, with its outbox cursor and
// lease (on this process's clock: one process holds the file).
type embeddedEndpoint struct {
	ID             string          `json:"id"`
	URL            string          `json:"url"`
	Description    string          `json:"description,omitempty"`
	Types          []string        `json:"types"`
	Tags           []string        `json:"tags,omitempty"`
	Codes          []string        `json:"codes,omitempty"`
	Disabled       bool            `json:"disabled,omitempty"`
	DisabledReason string          `json:"disabled_reason,omitempty"`
	Keys           json.RawMessage `json:"keys"`
	Batch          int             `json:"batch,omitempty"`
	BatchWaitMS    int64           `json:"batch_wait_ms,omitempty"`
	CreatedAt      int64           `json:"created_at"` // Unix µs
	UpdatedAt      int64           `json:"updated_at"`
	Version        int64           `json:"version"`
	Cursor         int64           `json:"cursor"`              // events bucket sequence
	CursorTx       int64           `json:"cursor_tx,omitempty"` // 0 for the events bucket: kept as given
	LeaseOwner     string          `json:"lease_owner,omitempty"`
	LeaseUntil     int64           `json:"lease_until,omitempty"`
}

func toEmbeddedEndpoint(e webhook.Endpoint) (embeddedEndpoint, error) {
	keys, err := encodeKeys(e.Keys)
	return embeddedEndpoint{ID: e.ID, URL: e.URL, Description: e.Description, Types: e.Types, Tags: e.Tags, Codes: e.Codes,
		Disabled: e.Disabled, DisabledReason: e.DisabledReason, Keys: keys, Batch: e.Batch,
		BatchWaitMS: e.BatchWait.Milliseconds(), CreatedAt: link.ToMicros(e.CreatedAt), UpdatedAt: link.ToMicros(e.UpdatedAt),
		Version: e.Version}, err
}

func (r embeddedEndpoint) endpoint() (webhook.Endpoint, error) {
	keys, err := decodeKeys(r.Keys)
	return webhook.Endpoint{ID: r.ID, URL: r.URL, Description: r.Description, Types: r.Types, Tags: r.Tags, Codes: r.Codes,
		Disabled: r.Disabled, DisabledReason: r.DisabledReason, Keys: keys, Batch: r.Batch,
		BatchWait: time.Duration(r.BatchWaitMS) * time.Millisecond, CreatedAt: link.FromMicros(r.CreatedAt),
		UpdatedAt: link.FromMicros(r.UpdatedAt), Version: r.Version}, err
}

// updateHooks runs fn in a write transaction with the webhook buckets.
func (s *EmbeddedStore) updateHooks(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{embeddedHookEndpoints, embeddedHookMessages, embeddedHookBodies, embeddedHookDue, embeddedHookAttempts} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}

// viewHooks runs fn in a read transaction; without the buckets (no
// webhook ever made) fn does not run.
func (s *EmbeddedStore) viewHooks(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(embeddedHookEndpoints) == nil {
			return nil
		}
		return fn(tx)
	})
}

func readHookEndpoint(tx *bolt.Tx, id string) (embeddedEndpoint, error) {
	var r embeddedEndpoint
	v := tx.Bucket(embeddedHookEndpoints).Get([]byte(id))
	if v == nil {
		return r, webhook.ErrNotFound
	}
	return r, json.Unmarshal(v, &r)
}

func putHookEndpoint(tx *bolt.Tx, r embeddedEndpoint) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return tx.Bucket(embeddedHookEndpoints).Put([]byte(r.ID), v)
}

// CreateEndpoint implements webhook.Store.
func (s *EmbeddedStore) CreateEndpoint(ctx context.Context, e webhook.Endpoint, from link.EventCursor) error {
	r, err := toEmbeddedEndpoint(e)
	if err != nil {
		return fmt.Errorf("creating webhook endpoint: %w", err)
	}
	r.Version, r.Cursor, r.CursorTx = 1, from.Seq, from.Tx
	return s.updateHooks(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(embeddedHookEndpoints).Stats().KeyN >= webhook.MaxEndpoints {
			return webhook.ErrTooMany
		}
		return putHookEndpoint(tx, r)
	})
}

// Endpoint implements webhook.Store.
func (s *EmbeddedStore) Endpoint(ctx context.Context, id string) (webhook.Endpoint, error) {
	e, err := webhook.Endpoint{}, webhook.ErrNotFound
	_ = s.viewHooks(ctx, func(tx *bolt.Tx) error {
		var r embeddedEndpoint
		if r, err = readHookEndpoint(tx, id); err == nil {
			e, err = r.endpoint()
		}
		return nil
	})
	return e, err
}

// Endpoints implements webhook.Store.
func (s *EmbeddedStore) Endpoints(ctx context.Context) ([]webhook.Endpoint, error) {
	var out []webhook.Endpoint
	err := s.viewHooks(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(embeddedHookEndpoints).ForEach(func(_, v []byte) error {
			var r embeddedEndpoint
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			e, err := r.endpoint()
			out = append(out, e)
			return err
		})
	})
	sortEndpoints(out)
	return out, err
}

// UpdateEndpoint implements webhook.Store.
func (s *EmbeddedStore) UpdateEndpoint(ctx context.Context, id string, now time.Time, fn func(*webhook.Endpoint) error) (webhook.Endpoint, error) {
	var out webhook.Endpoint
	err := s.updateHooks(ctx, func(tx *bolt.Tx) error {
		r, err := readHookEndpoint(tx, id)
		if err != nil {
			return err
		}
		e, err := r.endpoint()
		if err != nil {
			return err
		}
		if err := fn(&e); err != nil {
			return err
		}
		e.ID, e.Version, e.UpdatedAt = id, r.Version+1, now.UTC()
		next, err := toEmbeddedEndpoint(e)
		if err != nil {
			return err
		}
		next.Cursor, next.CursorTx, next.LeaseOwner, next.LeaseUntil = r.Cursor, r.CursorTx, r.LeaseOwner, r.LeaseUntil
		out = e
		return putHookEndpoint(tx, next)
	})
	return out, err
}

// DeleteEndpoint implements webhook.Store: the endpoint, its messages,
// their attempts and due entries.
func (s *EmbeddedStore) DeleteEndpoint(ctx context.Context, id string) error {
	return s.updateHooks(ctx, func(tx *bolt.Tx) error {
		if _, err := readHookEndpoint(tx, id); err != nil {
			return err
		}
		prefix := append([]byte(id), 0)
		msgs := tx.Bucket(embeddedHookMessages)
		for k, _ := seekPrefix(msgs, prefix); k != nil; k, _ = seekPrefix(msgs, prefix) {
			if err := deleteAttempts(tx, string(k[len(prefix):])); err != nil {
				return err
			}
			if err := tx.Bucket(embeddedHookBodies).Delete(k[len(prefix):]); err != nil {
				return err
			}
			if err := msgs.Delete(k); err != nil {
				return err
			}
		}
		due := tx.Bucket(embeddedHookDue)
		for k, _ := seekPrefix(due, prefix); k != nil; k, _ = seekPrefix(due, prefix) {
			if err := due.Delete(k); err != nil {
				return err
			}
		}
		return tx.Bucket(embeddedHookEndpoints).Delete([]byte(id))
	})
}

// seekPrefix returns the first key of b with prefix, nil if none.
func seekPrefix(b *bolt.Bucket, prefix []byte) ([]byte, []byte) {
	k, v := b.Cursor().Seek(prefix)
	if k == nil || len(k) < len(prefix) || string(k[:len(prefix)]) != string(prefix) {
		return nil, nil
	}
	return k, v
}

func deleteAttempts(tx *bolt.Tx, msgID string) error {
	b := tx.Bucket(embeddedHookAttempts)
	prefix := append([]byte(msgID), 0)
	for k, _ := seekPrefix(b, prefix); k != nil; k, _ = seekPrefix(b, prefix) {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// sortEndpoints orders endpoints by creation time, then id, as
// PostgreSQL lists them.
func sortEndpoints(eps []webhook.Endpoint) {
	slices.SortFunc(eps, func(a, b webhook.Endpoint) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
