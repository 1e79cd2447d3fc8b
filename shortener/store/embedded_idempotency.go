package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Buckets of idempotent and reusing creates, made on first use.
var (
	// embeddedReuse indexes the links with generated codes by long URL:
	// sha256(long URL)[:16] + code → empty.
	embeddedReuse = []byte("reuse")
	// EmbeddedIdem: len(scope) (1 byte) + scope + key → embeddedIdemRecord.
	EmbeddedIdem = []byte("idem")
	// EmbeddedIdemAge orders idem records for pruning: created (8 bytes,
	// Unix microseconds, big-endian) + the idem key → empty.
	EmbeddedIdemAge = []byte("idem_age")
)

// embeddedIdemRecord is a recorded answer.
type embeddedIdemRecord struct {
	Digest    []byte `json:"d"`
	Status    int    `json:"s"`
	Body      []byte `json:"b"`
	CreatedAt int64  `json:"c"` // Unix microseconds
}

// errRolledBack ends a bbolt transaction whose answer is not recorded.
var errRolledBack = errors.New("rolled back")

// CreateTx implements TxStore in one bbolt write transaction: bbolt runs
// one at a time, so a concurrent duplicate waits for the first to commit.
func (s *EmbeddedStore) CreateTx(ctx context.Context, claim *link.IdemClaim, now time.Time,
	fn func(context.Context, link.LinkTx) (link.IdemAnswer, error)) (ans link.IdemAnswer, replayed bool, err error) {
	if err := ctx.Err(); err != nil {
		return link.IdemAnswer{}, false, err
	}
	err = s.Db.Update(func(tx *bolt.Tx) error {
		ans, replayed = link.IdemAnswer{}, false
		if claim != nil {
			if err := pruneEmbeddedIdem(tx, now); err != nil {
				return err
			}
			rec, found, err := getEmbeddedIdem(tx, claim.Scope, claim.Key, now)
			if err != nil {
				return err
			}
			if found {
				if !bytes.Equal(rec.Digest, claim.BodySHA256[:]) {
					return link.ErrIdemMismatch
				}
				ans, replayed = link.IdemAnswer{Status: rec.Status, Body: rec.Body}, true
				return nil
			}
		}
		var err error
		ans, err = fn(ctx, embeddedLinkTx{tx, s.Events})
		if err != nil {
			return err
		}
		if ans.Status >= 500 {
			return errRolledBack
		}
		if claim == nil {
			return nil
		}
		return putEmbeddedIdem(tx, claim, ans, now)
	})
	switch {
	case err == nil:
		return ans, replayed, nil
	case errors.Is(err, errRolledBack):
		return ans, false, nil
	case errors.Is(err, link.ErrIdemMismatch):
		return link.IdemAnswer{}, false, link.ErrIdemMismatch
	default:
		return link.IdemAnswer{}, false, err
	}
}

// IdemLookup implements TxStore.
func (s *EmbeddedStore) IdemLookup(ctx context.Context, scope, key string, now time.Time) (digest [32]byte, ans link.IdemAnswer, found bool, err error) {
	if err := ctx.Err(); err != nil {
		return digest, ans, false, err
	}
	err = s.Db.View(func(tx *bolt.Tx) error {
		rec, ok, err := getEmbeddedIdem(tx, scope, key, now)
		if err != nil || !ok {
			return err
		}
		copy(digest[:], rec.Digest)
		ans, found = link.IdemAnswer{Status: rec.Status, Body: rec.Body}, true
		return nil
	})
	if err != nil {
		return digest, link.IdemAnswer{}, false, fmt.Errorf("reading idempotency record: %w", err)
	}
	return digest, ans, found, nil
}

func embeddedIdemKey(scope, key string) []byte {
	k := make([]byte, 0, 1+len(scope)+len(key))
	k = append(k, byte(len(scope)))
	k = append(k, scope...)
	return append(k, key...)
}

// getEmbeddedIdem returns the live record of scope and key.
func getEmbeddedIdem(tx *bolt.Tx, scope, key string, now time.Time) (embeddedIdemRecord, bool, error) {
	var rec embeddedIdemRecord
	b := tx.Bucket(EmbeddedIdem)
	if b == nil || len(scope) > 255 {
		return rec, false, nil
	}
	v := b.Get(embeddedIdemKey(scope, key))
	if v == nil {
		return rec, false, nil
	}
	if err := json.Unmarshal(v, &rec); err != nil {
		return rec, false, fmt.Errorf("corrupt idempotency record: %w", err)
	}
	if !link.FromMicros(rec.CreatedAt).After(now.Add(-link.IdemTTL)) {
		return rec, false, nil
	}
	return rec, true, nil
}

// putEmbeddedIdem records an answer, replacing an expired record.
func putEmbeddedIdem(tx *bolt.Tx, c *link.IdemClaim, ans link.IdemAnswer, now time.Time) error {
	if len(c.Scope) > 255 {
		return fmt.Errorf("idempotency scope of %d bytes", len(c.Scope))
	}
	b, err := tx.CreateBucketIfNotExists(EmbeddedIdem)
	if err != nil {
		return err
	}
	age, err := tx.CreateBucketIfNotExists(EmbeddedIdemAge)
	if err != nil {
		return err
	}
	k := embeddedIdemKey(c.Scope, c.Key)
	if old := b.Get(k); old != nil {
		var rec embeddedIdemRecord
		if err := json.Unmarshal(old, &rec); err == nil {
			if err := age.Delete(append(seqKey(rec.CreatedAt), k...)); err != nil {
				return err
			}
		}
	}
	v, err := json.Marshal(embeddedIdemRecord{Digest: c.BodySHA256[:], Status: ans.Status, Body: ans.Body, CreatedAt: link.ToMicros(now)})
	if err != nil {
		return err
	}
	if err := b.Put(k, v); err != nil {
		return err
	}
	return age.Put(append(seqKey(link.ToMicros(now)), k...), nil)
}

// pruneEmbeddedIdem deletes up to IdemPruneBatch expired records, oldest
// first.
func pruneEmbeddedIdem(tx *bolt.Tx, now time.Time) error {
	age, b := tx.Bucket(EmbeddedIdemAge), tx.Bucket(EmbeddedIdem)
	if age == nil || b == nil {
		return nil
	}
	cutoff := link.ToMicros(now.Add(-link.IdemTTL))
	c := age.Cursor()
	for n, k := 0, firstKey(c); k != nil && n < link.IdemPruneBatch; n, k = n+1, firstKey(c) {
		if len(k) < 8 || int64(binary.BigEndian.Uint64(k[:8])) > cutoff {
			return nil
		}
		if err := b.Delete(k[8:]); err != nil {
			return err
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

func firstKey(c *bolt.Cursor) []byte {
	k, _ := c.First()
	return k
}

// reuseIndexKey is a link's key in embeddedReuse.
func reuseIndexKey(longURL, code string) []byte {
	d := sha256.Sum256([]byte(longURL))
	return append(d[:16:16], code...)
}

// putReuseIndex indexes a link with a generated code for reuse.
func putReuseIndex(tx *bolt.Tx, l link.Link) error {
	if l.Custom {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(embeddedReuse)
	if err != nil {
		return err
	}
	return b.Put(reuseIndexKey(l.LongURL, l.Code), nil)
}

// embeddedLinkTx is LinkTx in a bbolt write transaction.
type embeddedLinkTx struct {
	tx     *bolt.Tx
	events bool // record link.created events (EmbeddedStore.Events)
}

// Insert implements LinkTx.
func (t embeddedLinkTx) Insert(ctx context.Context, links []link.Link) ([]bool, error) {
	stored := make([]bool, len(links))
	b, o := t.tx.Bucket(EmbeddedLinks), t.tx.Bucket(EmbeddedOrder)
	for i, l := range links {
		if err := CheckNewLink(l); err != nil {
			return nil, err
		}
		if l.CreatedAt.IsZero() {
			l.CreatedAt = time.Now()
		}
		key := []byte(l.Code)
		if b.Get(key) != nil {
			continue
		}
		l.Version = 1
		v, err := json.Marshal(record(l))
		if err != nil {
			return nil, err
		}
		if err := b.Put(key, v); err != nil {
			return nil, err
		}
		if err := recordEvent(t.tx, t.events, link.EventCreated, l.Code, v); err != nil {
			return nil, err
		}
		seq, err := o.NextSequence()
		if err != nil {
			return nil, err
		}
		if err := o.Put(seqKey(int64(seq)), key); err != nil {
			return nil, err
		}
		if err := putReuseIndex(t.tx, l); err != nil {
			return nil, err
		}
		if err := t.tx.Bucket(embeddedCreated).Put(createdKey(link.ToMicros(l.CreatedAt), l.Code), nil); err != nil {
			return nil, err
		}
		stored[i] = true
	}
	return stored, nil
}

// Reusable implements LinkTx: the write transaction is the lock.
func (t embeddedLinkTx) Reusable(ctx context.Context, links []link.Link, now time.Time) ([]link.Link, error) {
	out := make([]link.Link, len(links))
	idx := t.tx.Bucket(embeddedReuse)
	if idx == nil {
		return out, nil
	}
	b := t.tx.Bucket(EmbeddedLinks)
	for i, want := range links {
		prefix := reuseIndexKey(want.LongURL, "")
		c := idx.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			code := string(k[len(prefix):])
			v := b.Get([]byte(code))
			if v == nil {
				continue
			}
			var rec embeddedRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return nil, fmt.Errorf("corrupt link %q: %w", code, err)
			}
			l := rec.link(code)
			if link.Reusable(l, want, now) && (out[i].Code == "" || l.CreatedAt.Before(out[i].CreatedAt)) {
				out[i] = l
			}
		}
	}
	return out, nil
}

var _ link.TxStore = (*EmbeddedStore)(nil)
