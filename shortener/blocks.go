package shortener

import (
	"context"
	"sync"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// blockAllocator hands out sequential IDs from blocks reserved in the store.
type blockAllocator struct {
	mu        sync.Mutex
	next, end int64
}

func (b *blockAllocator) nextID(ctx context.Context, s link.Store, size int64) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next >= b.end {
		first, err := s.NextBlock(ctx, size)
		if err != nil {
			return 0, err
		}
		b.next, b.end = first, first+size
	}
	id := b.next
	b.next++
	return id, nil
}
