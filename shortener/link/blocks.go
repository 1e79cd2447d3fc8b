package link

import (
	"context"
	"sync"
)

// Blocks hands out sequential IDs from blocks of consecutive IDs reserved
// in a store (Store.NextBlock), so that instances sharing the store never
// hand out one ID twice and reserve once per block. The zero value is
// ready; it is safe for concurrent use.
type Blocks struct {
	mu        sync.Mutex
	next, end int64
}

// Next returns the next ID, reserving a block of size from s when the
// current one is used up.
func (b *Blocks) Next(ctx context.Context, s Store, size int64) (int64, error) {
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
