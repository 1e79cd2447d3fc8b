package shortener

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/store"
)

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
	_ secretKeeper = (*store.PostgresStore)(nil)
	_ secretKeeper = (*store.EmbeddedStore)(nil)
)
