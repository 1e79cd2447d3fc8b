package codefilter

import (
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// A skipped sequence number is looked for again for SeqGapGrace: a
// writer's transaction may commit after a later one. A number still
// missing after that is taken for a failed insert (a taken code, a
// rollback); a transaction open longer is found by the next rebuild.
const (
	SeqGapGrace = time.Minute
	MaxSeqGaps  = 256 // ranges of missing numbers tracked; the oldest go first
)

// SeqCursor is the delta sync's position in the creation order: the
// highest sequence number seen, and the numbers below it not seen yet
// (gaps). A gap is either a failed insert, which never fills, or a writer
// that took its number before a later one committed; so each is looked for
// again, by reading from just below the oldest one, for SeqGapGrace.
type SeqCursor struct {
	top  int64
	gaps []seqGap // ascending, disjoint, all below top
}

// seqGap is a range of missing numbers and when the first sync missed it
// (Unix nanoseconds).
type seqGap struct {
	lo, hi int64
	since  int64
}

// From returns where the next sync reads from (exclusive), after dropping
// the gaps older than SeqGapGrace at now.
func (c *SeqCursor) From(now int64) int64 {
	keep := c.gaps[:0]
	for _, g := range c.gaps {
		if now-g.since <= int64(SeqGapGrace) {
			keep = append(keep, g)
		}
	}
	clear(c.gaps[len(keep):])
	c.gaps = keep
	if len(c.gaps) > 0 {
		return c.gaps[0].lo - 1
	}
	return c.top
}

// Saw records one page of a sync that read from From(): page ascending by
// Seq. Numbers it holds leave their gap; numbers it skips above top become
// gaps missed at now.
func (c *SeqCursor) Saw(page []link.SeqCode, now int64) {
	if len(page) == 0 {
		return
	}
	var gaps []seqGap
	i := 0
	for _, g := range c.gaps {
		lo := g.lo
		for ; i < len(page) && page[i].Seq <= g.hi; i++ {
			if s := page[i].Seq; s >= lo {
				if s > lo {
					gaps = append(gaps, seqGap{lo, s - 1, g.since})
				}
				lo = s + 1
			}
		}
		if lo <= g.hi {
			gaps = append(gaps, seqGap{lo, g.hi, g.since})
		}
	}
	for _, sc := range page[i:] {
		if sc.Seq <= c.top {
			continue
		}
		if sc.Seq > c.top+1 {
			gaps = append(gaps, seqGap{c.top + 1, sc.Seq - 1, now})
		}
		c.top = sc.Seq
	}
	if len(gaps) > MaxSeqGaps {
		gaps = gaps[len(gaps)-MaxSeqGaps:]
	}
	c.gaps = gaps
}

// Place puts a new cursor at top: the numbers up to it count as seen.
func (c *SeqCursor) Place(top int64) { c.top = top }

// Top is the highest sequence number seen.
func (c *SeqCursor) Top() int64 { return c.top }
