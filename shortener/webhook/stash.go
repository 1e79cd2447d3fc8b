package webhook

import "slices"

// bodyStash keeps a dispatcher worker's message bodies' memory from one
// round to the next. A sync.Pool would not: it is emptied every other
// garbage collection, and a busy Caddy collects several times between
// two rounds, so each round's bodies (a batch of 100 clicks is 25 KB)
// would be new allocations, grown by doubling.
type bodyStash struct {
	free  [][]byte
	bytes int // the capacity kept in free
}

// maxStashBytes bounds the memory a worker keeps: a round's batches of
// 100 clicks (at most maxRoundEvents clicks) fit.
const maxStashBytes = 4 << 20

// get is an empty body of capacity n or more.
func (s *bodyStash) get(n int) []byte {
	var b []byte
	if s != nil && len(s.free) > 0 {
		b = s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
		s.bytes -= cap(b)
	} else {
		b = newBody()
	}
	return slices.Grow(b[:0], n)
}

// put keeps the bodies' memory for the next round (the pool takes what
// does not fit); msgs must not be used after.
func (s *bodyStash) put(msgs []Message) {
	for i := range msgs {
		b := msgs[i].Body
		msgs[i].Body = nil
		if s == nil || cap(b) == 0 || cap(b) > maxPooledBody || s.bytes+cap(b) > maxStashBytes {
			releaseBody(b)
			continue
		}
		s.free = append(s.free, b)
		s.bytes += cap(b)
	}
}
