package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// EmbeddedStore keeps links in one bbolt file: pure Go, for a single Caddy
// instance. bbolt locks the file, so only one EmbeddedStore per path may be
// open at a time, in any process; the handler shares one per path.
type EmbeddedStore struct {
	Db   *bolt.DB
	path string
	// Events: record every change of a link in the outbox (the events
	// bucket, link.EventLog) in the change's own transaction. Set before
	// use, by a handler with webhooks.
	Events bool
	// MaxDomains bounds the link domains (link.DomainStore); 0 is
	// link.MaxDomains. Set before use (by tests, lower).
	MaxDomains int
}

// Buckets and keys of the file.
var (
	EmbeddedLinks  = []byte("links") // code → embeddedRecord (JSON)
	EmbeddedOrder  = []byte("order") // creation sequence number, 8 bytes big-endian → code
	embeddedMeta   = []byte("meta")
	embeddedNextID = []byte("next_id") // in meta: the next free ID, 8 bytes big-endian
)

// embeddedOpenTimeout bounds the wait for the file lock.
const embeddedOpenTimeout = 2 * time.Second

// embeddedRecord is a link as stored; times are Unix microseconds (as
// precise as PostgreSQL), 0 for none. Metadata and rules are omitted when
// unset, so records written before they existed decode as links without
// any.
type embeddedRecord struct {
	LongURL        string   `json:"u"`
	CreatedAt      int64    `json:"c"`
	ExpiresAt      int64    `json:"e,omitempty"`
	RevokedAt      int64    `json:"r,omitempty"`
	Title          string   `json:"t,omitempty"`
	Tags           []string `json:"g,omitempty"`
	Notes          string   `json:"n,omitempty"`
	RedirectStatus int      `json:"s,omitempty"`
	ValidFrom      int64    `json:"v,omitempty"`
	MaxClicks      int64    `json:"m,omitempty"`
	ForwardQuery   *bool    `json:"q,omitempty"`
	ClicksServed   int64    `json:"k,omitempty"`
	// Version of the link; 0 (records written before versions) reads as 1.
	Version int64 `json:"ver,omitempty"`
	// Auto: the code was generated (Link.Custom false). Absent in records
	// written before it existed, which read as custom, never reused.
	Auto bool `json:"a,omitempty"`
	// Targeting (its JSON, as a string: read back byte for byte) and
	// FallbackURL; absent for none.
	Targeting   string `json:"tg,omitempty"`
	FallbackURL string `json:"fb,omitempty"`
}

// record is l as stored.
func record(l link.Link) embeddedRecord {
	return embeddedRecord{
		LongURL:        l.LongURL,
		CreatedAt:      link.ToMicros(l.CreatedAt),
		ExpiresAt:      link.ToMicros(l.ExpiresAt),
		RevokedAt:      link.ToMicros(l.RevokedAt),
		Title:          l.Title,
		Tags:           l.Tags,
		Notes:          l.Notes,
		RedirectStatus: l.RedirectStatus,
		ValidFrom:      link.ToMicros(l.ValidFrom),
		MaxClicks:      l.MaxClicks,
		ForwardQuery:   l.ForwardQuery,
		ClicksServed:   l.ClicksServed,
		Version:        l.Version,
		Auto:           !l.Custom,
		Targeting:      string(l.Targeting),
		FallbackURL:    l.FallbackURL,
	}
}

// link is the stored rec of code.
func (rec embeddedRecord) link(code string) link.Link {
	return link.Link{
		Code:           code,
		LongURL:        rec.LongURL,
		CreatedAt:      link.FromMicros(rec.CreatedAt),
		ExpiresAt:      link.FromMicros(rec.ExpiresAt),
		RevokedAt:      link.FromMicros(rec.RevokedAt),
		Title:          rec.Title,
		Tags:           link.TagsOrNil(rec.Tags),
		Notes:          rec.Notes,
		RedirectStatus: rec.RedirectStatus,
		ValidFrom:      link.FromMicros(rec.ValidFrom),
		MaxClicks:      rec.MaxClicks,
		ForwardQuery:   rec.ForwardQuery,
		ClicksServed:   rec.ClicksServed,
		Version:        max(rec.Version, 1),
		Custom:         !rec.Auto,
		Targeting:      targetingOf(rec.Targeting),
		FallbackURL:    rec.FallbackURL,
	}
}

// targetingOf is a record's targeting as Link.Targeting holds it.
func targetingOf(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// OpenEmbedded opens the store file at path, creating it (mode 0600) and its
// directory (0700) if needed. If another process or store holds the file,
// it fails after 2s.
func OpenEmbedded(path string) (*EmbeddedStore, error) {
	return OpenEmbeddedTimeout(path, embeddedOpenTimeout)
}

func OpenEmbeddedTimeout(path string, timeout time.Duration) (*EmbeddedStore, error) {
	if path == "" {
		return nil, errors.New("opening embedded store: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("opening embedded store: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("opening embedded store %s: the file is locked by another process (or another store on the same path) and was not released within %v", path, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("opening embedded store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(EmbeddedLinks); err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(EmbeddedOrder); err != nil {
			return err
		}
		if err := ensureCreatedIndex(tx); err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(embeddedMeta); err != nil {
			return err
		}
		return initSessions(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening embedded store %s: %w", path, err)
	}
	return &EmbeddedStore{Db: db, path: path}, nil
}

// Get implements Store.
func (s *EmbeddedStore) Get(ctx context.Context, code string) (link.Link, error) {
	if err := ctx.Err(); err != nil {
		return link.Link{}, err
	}
	var rec embeddedRecord
	err := s.Db.View(func(tx *bolt.Tx) error {
		var err error
		rec, err = readRecord(tx.Bucket(EmbeddedLinks), code) // copies the bytes valid only in tx
		return err
	})
	if err != nil {
		if errors.Is(err, link.ErrNotFound) {
			return link.Link{}, link.ErrNotFound
		}
		return link.Link{}, fmt.Errorf("getting link: %w", err)
	}
	return rec.link(code), nil
}

// Create implements Store. A zero CreatedAt is stored as now.
func (s *EmbeddedStore) Create(ctx context.Context, l link.Link) error {
	if err := CheckNewLink(l); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.CreatedAt.IsZero() {
		l.CreatedAt = time.Now()
	}
	l.Version = 1
	v, err := json.Marshal(record(l))
	if err != nil {
		return fmt.Errorf("creating link: %w", err)
	}
	key := []byte(l.Code)
	// A taken code is answered from a read transaction; only a free one
	// joins a write batch (one fsync for many concurrent Creates). The
	// batch function checks again: it is the one that counts.
	err = s.Db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(EmbeddedLinks).Get(key) != nil {
			return link.ErrCodeTaken
		}
		return nil
	})
	if err == nil {
		err = s.Db.Batch(func(tx *bolt.Tx) error {
			b := tx.Bucket(EmbeddedLinks)
			if b.Get(key) != nil {
				return link.ErrCodeTaken
			}
			if err := b.Put(key, v); err != nil {
				return err
			}
			if err := recordEvent(tx, s.Events, link.EventCreated, l.Code, v); err != nil {
				return err
			}
			if err := putReuseIndex(tx, l); err != nil {
				return err
			}
			// The number is part of this transaction: a rolled-back
			// create leaves no gap.
			o := tx.Bucket(EmbeddedOrder)
			seq, err := o.NextSequence()
			if err != nil {
				return err
			}
			if err := o.Put(seqKey(int64(seq)), key); err != nil {
				return err
			}
			return tx.Bucket(embeddedCreated).Put(createdKey(link.ToMicros(l.CreatedAt), l.Code), nil)
		})
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, link.ErrCodeTaken):
		return link.ErrCodeTaken
	default:
		return fmt.Errorf("creating link: %w", err)
	}
}

// readRecord decodes the record of code in the links bucket b, or
// ErrNotFound.
func readRecord(b *bolt.Bucket, code string) (embeddedRecord, error) {
	var rec embeddedRecord
	v := b.Get([]byte(code))
	if v == nil {
		return rec, link.ErrNotFound
	}
	return rec, json.Unmarshal(v, &rec)
}

// Revoke implements Store.
func (s *EmbeddedStore) Revoke(ctx context.Context, code string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if at.IsZero() {
		return errors.New("revoking link: zero time")
	}
	key := []byte(code)
	err := s.Db.Batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(EmbeddedLinks)
		rec, err := readRecord(b, code)
		if err != nil {
			return err
		}
		if rec.RevokedAt != 0 {
			return nil // keep the first revocation
		}
		rec.RevokedAt = link.ToMicros(at)
		rec.Version = max(rec.Version, 1) + 1
		nv, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		if err := recordEvent(tx, s.Events, link.EventRevoked, code, nv); err != nil {
			return err
		}
		return b.Put(key, nv)
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, link.ErrNotFound):
		return link.ErrNotFound
	default:
		return fmt.Errorf("revoking link: %w", err)
	}
}

// TakeServe implements link.ServeCounter: the record is read, checked and
// rewritten in one write transaction (bbolt runs one at a time, and the
// handler shares one store per file), committed before it returns. Its
// own transaction, not a Batch: a batch waits up to 10ms for company, which
// a lone redirect would pay (BenchmarkRedirectMaxClicks: 12.7 ms a redirect
// with Batch, 0.8 ms with Update).
func (s *EmbeddedStore) TakeServe(ctx context.Context, code string) (int64, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	var (
		left int64
		ok   bool
		key  = []byte(code)
	)
	err := s.Db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(EmbeddedLinks)
		rec, err := readRecord(b, code)
		if err != nil {
			return err
		}
		switch {
		case rec.MaxClicks == 0:
			left, ok = -1, true
			return nil
		case rec.ClicksServed >= rec.MaxClicks:
			left, ok = 0, false
			return nil
		}
		rec.ClicksServed++
		left, ok = rec.MaxClicks-rec.ClicksServed, true
		nv, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		if left == 0 {
			if err := recordEvent(tx, s.Events, link.EventMaxClicks, code, nv); err != nil {
				return err
			}
		}
		return b.Put(key, nv)
	})
	switch {
	case err == nil:
		return left, ok, nil
	case errors.Is(err, link.ErrNotFound):
		return 0, false, link.ErrNotFound
	default:
		return 0, false, fmt.Errorf("counting a served redirect: %w", err)
	}
}

// NextBlock implements Store: the counter is read and advanced in one write
// transaction, and bbolt runs one write transaction at a time.
func (s *EmbeddedStore) NextBlock(ctx context.Context, size int64) (int64, error) {
	if size < 1 {
		return 0, fmt.Errorf("reserving IDs: block size %d, want at least 1", size)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var first int64
	// Batch may run the function more than once (if another in the batch
	// fails); only the committed run's first survives.
	err := s.Db.Batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(embeddedMeta)
		next := int64(1)
		if v := b.Get(embeddedNextID); v != nil {
			if len(v) != 8 {
				return fmt.Errorf("corrupt ID counter (%d bytes)", len(v))
			}
			next = int64(binary.BigEndian.Uint64(v))
		}
		if next > math.MaxInt64-size {
			return fmt.Errorf("ID space exhausted at %d", next)
		}
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], uint64(next+size))
		if err := b.Put(embeddedNextID, buf[:]); err != nil {
			return err
		}
		first = next
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reserving IDs: %w", err)
	}
	return first, nil
}

// ScanCodes implements CodeLister.
func (s *EmbeddedStore) ScanCodes(ctx context.Context, after string, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var codes []string
	err := s.Db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(EmbeddedLinks).Cursor()
		k, _ := c.Seek([]byte(after))
		if k != nil && string(k) == after {
			k, _ = c.Next()
		}
		for ; k != nil && len(codes) < limit; k, _ = c.Next() {
			codes = append(codes, string(k))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing codes: %w", err)
	}
	return codes, nil
}

// CodesSince implements CodeLister. Links created before the order bucket
// existed have no number; ScanCodes lists them.
func (s *EmbeddedStore) CodesSince(ctx context.Context, after int64, limit int) ([]link.SeqCode, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if after < 0 {
		after = 0
	}
	var codes []link.SeqCode
	err := s.Db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(EmbeddedOrder).Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil && len(codes) < limit; k, v = c.Next() {
			if len(k) != 8 {
				return fmt.Errorf("corrupt order key (%d bytes)", len(k))
			}
			codes = append(codes, link.SeqCode{Seq: int64(binary.BigEndian.Uint64(k)), Code: string(v)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing new codes: %w", err)
	}
	return codes, nil
}

// LastSeq implements CodeLister.
func (s *EmbeddedStore) LastSeq(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var last int64
	err := s.Db.View(func(tx *bolt.Tx) error {
		last = int64(tx.Bucket(EmbeddedOrder).Sequence())
		return nil
	})
	return last, err
}

func seqKey(seq int64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(seq))
	return k[:]
}

// Close closes the file and releases its lock.
func (s *EmbeddedStore) Close() error {
	return s.Db.Close()
}

// CheckNewLink refuses links no store should hold.
func CheckNewLink(l link.Link) error {
	if l.Code == "" {
		return errors.New("creating link: empty code")
	}
	if l.LongURL == "" {
		return errors.New("creating link: empty long URL")
	}
	if err := link.CheckMetadata(l.Title, l.Tags, l.Notes); err != nil {
		return fmt.Errorf("creating link: %w", err)
	}
	if err := link.CheckRules(l); err != nil {
		return fmt.Errorf("creating link: %w", err)
	}
	return nil
}

var (
	_ link.Store        = (*EmbeddedStore)(nil)
	_ link.CodeLister   = (*EmbeddedStore)(nil)
	_ link.ServeCounter = (*EmbeddedStore)(nil)
)
