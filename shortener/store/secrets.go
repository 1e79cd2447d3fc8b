package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The secrets each store keeps for every instance using it (secretKeeper).

// SecretLen is the size of a shared secret: a 256-bit HMAC key.
const SecretLen = 32

func newSecret() []byte {
	b := make([]byte, SecretLen)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather)
	return b
}

// Secret implements secretKeeper on the table of migrations/015_secrets.up.sql.
func (s *PostgresStore) Secret(ctx context.Context, name string) ([]byte, error) {
	if _, err := s.Pool.Exec(ctx, `INSERT INTO shortener_secrets (name, secret) VALUES ($1, $2)
		ON CONFLICT (name) DO NOTHING`, name, newSecret()); err != nil {
		return nil, fmt.Errorf("creating the %s secret: %w", name, err)
	}
	var v []byte
	if err := s.Pool.QueryRow(ctx, `SELECT secret FROM shortener_secrets WHERE name = $1`, name).Scan(&v); err != nil {
		return nil, fmt.Errorf("reading the %s secret: %w", name, err)
	}
	if len(v) != SecretLen {
		return nil, fmt.Errorf("the %s secret is %d bytes, want %d", name, len(v), SecretLen)
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
	err := s.Db.Update(func(tx *bolt.Tx) error {
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
	if len(v) != SecretLen {
		return nil, fmt.Errorf("the %s secret is %d bytes, want %d", name, len(v), SecretLen)
	}
	return v, nil
}
