package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// embeddedHistory is the bucket of link histories, created by the first
// edit: <code> 0x00 <version, 8 bytes big-endian> → embeddedChange (JSON).
// Codes hold no 0x00 byte, so one code's entries are one key range, in
// Version order.
var embeddedHistory = []byte("history")

// embeddedChange is a history entry as stored; At in Unix microseconds.
type embeddedChange struct {
	At      int64                  `json:"a"`
	Key     string                 `json:"k"`
	Changes map[string]link.Change `json:"c"`
}

func historyKey(code string, version int64) []byte {
	k := make([]byte, 0, len(code)+9)
	k = append(append(k, code...), 0)
	return binary.BigEndian.AppendUint64(k, uint64(version))
}

// Edit implements LinkEditor in one write transaction: bbolt runs one at a
// time, so concurrent edits take turns and each sees the version the one
// before it left.
func (s *EmbeddedStore) Edit(ctx context.Context, code string, e link.Edit) (link.Link, error) {
	if err := ctx.Err(); err != nil {
		return link.Link{}, err
	}
	var out link.Link
	err := s.Db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(EmbeddedLinks)
		v := b.Get([]byte(code))
		if v == nil {
			return link.ErrNotFound
		}
		var rec embeddedRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		next, changes, err := link.ApplyEdit(rec.link(code), e)
		if err != nil || len(changes) == 0 {
			out = next
			return err
		}
		nv, err := json.Marshal(record(next))
		if err != nil {
			return err
		}
		hv, err := json.Marshal(embeddedChange{At: link.ToMicros(e.At), Key: e.Key, Changes: changes})
		if err != nil {
			return err
		}
		h, err := tx.CreateBucketIfNotExists(embeddedHistory)
		if err != nil {
			return err
		}
		if err := h.Put(historyKey(code, next.Version), hv); err != nil {
			return err
		}
		if err := recordEvent(tx, s.Events, link.EventUpdated, code, nv); err != nil {
			return err
		}
		out = next
		return b.Put([]byte(code), nv)
	})
	switch {
	case err == nil:
		return out, nil
	case errors.Is(err, link.ErrNotFound), errors.Is(err, link.ErrRevoked), errors.Is(err, link.ErrVersionMismatch):
		return link.Link{}, err
	default:
		return link.Link{}, fmt.Errorf("editing link: %w", err)
	}
}

// History implements LinkEditor: a backward walk of the code's key range.
func (s *EmbeddedStore) History(ctx context.Context, code string, before int64, limit int) ([]link.HistoryEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit = min(max(limit, 1), link.MaxHistoryPage)
	if before <= 0 {
		before = 1<<63 - 1
	}
	var entries []link.HistoryEntry
	err := s.Db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(EmbeddedLinks).Get([]byte(code)) == nil {
			return link.ErrNotFound
		}
		h := tx.Bucket(embeddedHistory)
		if h == nil {
			return nil
		}
		prefix := historyKey(code, 0)[:len(code)+1]
		c := h.Cursor()
		k, _ := c.Seek(historyKey(code, before))
		var v []byte
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev() // Seek lands on the first key >= before
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(entries) < limit; k, v = c.Prev() {
			var ch embeddedChange
			if err := json.Unmarshal(v, &ch); err != nil {
				return err
			}
			entries = append(entries, link.HistoryEntry{
				Version: int64(binary.BigEndian.Uint64(k[len(prefix):])),
				At:      link.FromMicros(ch.At),
				Key:     ch.Key,
				Changes: ch.Changes,
			})
		}
		return nil
	})
	if errors.Is(err, link.ErrNotFound) {
		return nil, link.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading history: %w", err)
	}
	return entries, nil
}

var _ link.LinkEditor = (*EmbeddedStore)(nil)
