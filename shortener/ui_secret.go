package shortener

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// secretLen is the size of a shared secret: a 256-bit HMAC key.
const secretLen = 32

// uiSessionSecret names the secret that signs dashboard sessions.
const uiSessionSecret = "ui_session"

// secretKeeper keeps secrets shared by every instance using a link store:
// both real stores.
type secretKeeper interface {
	// Secret returns the secret called name, creating a random one if no
	// instance has (the first to write it wins; every instance reads the
	// same).
	Secret(ctx context.Context, name string) ([]byte, error)
}

func newSecret() []byte {
	b := make([]byte, secretLen)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather)
	return b
}

// Secret implements secretKeeper on the table of migrations/015_secrets.up.sql.
func (s *PostgresStore) Secret(ctx context.Context, name string) ([]byte, error) {
	if _, err := s.pool.Exec(ctx, `INSERT INTO shortener_secrets (name, secret) VALUES ($1, $2)
		ON CONFLICT (name) DO NOTHING`, name, newSecret()); err != nil {
		return nil, fmt.Errorf("creating the %s secret: %w", name, err)
	}
	var v []byte
	if err := s.pool.QueryRow(ctx, `SELECT secret FROM shortener_secrets WHERE name = $1`, name).Scan(&v); err != nil {
		return nil, fmt.Errorf("reading the %s secret: %w", name, err)
	}
	if len(v) != secretLen {
		return nil, fmt.Errorf("the %s secret is %d bytes, want %d", name, len(v), secretLen)
	}
	return v, nil
}

// secretKey is the embedded store's meta key of the secret called name.
func secretKey(name string) []byte { return []byte("secret:" + name) }

// Secret implements secretKeeper in the embedded store's meta bucket.
func (s *EmbeddedStore) Secret(ctx context.Context, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var v []byte
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(embeddedMeta)
		if old := b.Get(secretKey(name)); old != nil {
			v = bytes.Clone(old)
			return nil
		}
		v = newSecret()
		return b.Put(secretKey(name), v)
	})
	if err != nil {
		return nil, fmt.Errorf("the %s secret: %w", name, err)
	}
	if len(v) != secretLen {
		return nil, fmt.Errorf("the %s secret is %d bytes, want %d", name, len(v), secretLen)
	}
	return v, nil
}

// secretCache holds one shared secret once read; a failed read is not
// tried again for secretRetry (sign-ins answer 503 meanwhile).
type secretCache struct {
	src    secretKeeper
	name   string
	mu     sync.Mutex
	v      []byte
	failed time.Time
	err    error
}

const secretRetry = 2 * time.Second

var errNoSecretStore = errors.New("the link store keeps no shared secrets")

func (c *secretCache) get(ctx context.Context) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.v != nil:
		return c.v, nil
	case c.src == nil:
		return nil, errNoSecretStore
	case !c.failed.IsZero() && time.Since(c.failed) < secretRetry:
		return nil, c.err
	}
	v, err := c.src.Secret(ctx, c.name)
	if err != nil {
		c.failed, c.err = time.Now(), err
		return nil, err
	}
	c.v = v
	return v, nil
}

var (
	_ secretKeeper = (*PostgresStore)(nil)
	_ secretKeeper = (*EmbeddedStore)(nil)
)
