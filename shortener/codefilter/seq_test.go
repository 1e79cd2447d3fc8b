package codefilter

import (
	"fmt"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

func seqPage(seqs ...int64) []link.SeqCode {
	page := make([]link.SeqCode, len(seqs))
	for i, s := range seqs {
		page[i] = link.SeqCode{Seq: s, Code: fmt.Sprint("c", s)}
	}
	return page
}

func TestSeqCursor(t *testing.T) {
	sec := int64(time.Second)
	var c SeqCursor
	if f := c.From(0); f != 0 {
		t.Fatalf("empty cursor from = %d, want 0", f)
	}
	// 1, 2, 5, 6, 9: 3-4 and 7-8 are missing.
	c.Saw(seqPage(1, 2, 5, 6, 9), 10*sec)
	if c.top != 9 || fmt.Sprint(c.gaps) != fmt.Sprint([]seqGap{{3, 4, 10 * sec}, {7, 8, 10 * sec}}) {
		t.Fatalf("after 1 2 5 6 9: top %d gaps %v", c.top, c.gaps)
	}
	// The next sync reads from just below the oldest gap.
	if f := c.From(11 * sec); f != 2 {
		t.Fatalf("from = %d, want 2", f)
	}
	// 4 and 8 commit late, 11 is new (10 missing): the read holds
	// everything above 2 again.
	c.Saw(seqPage(4, 5, 6, 8, 9, 11), 12*sec)
	want := []seqGap{{3, 3, 10 * sec}, {7, 7, 10 * sec}, {10, 10, 12 * sec}}
	if c.top != 11 || fmt.Sprint(c.gaps) != fmt.Sprint(want) {
		t.Fatalf("after late 4 and 8: top %d gaps %v, want 11 %v", c.top, c.gaps, want)
	}
	// A page that ends below some gaps leaves them alone.
	c.Saw(seqPage(3), 13*sec)
	want = want[1:]
	if c.top != 11 || fmt.Sprint(c.gaps) != fmt.Sprint(want) {
		t.Fatalf("after 3: top %d gaps %v, want %v", c.top, c.gaps, want)
	}
	// A gap is given up SeqGapGrace after the sync that first missed it.
	if f := c.From(10*sec + int64(SeqGapGrace)); f != 6 {
		t.Fatalf("from at grace = %d, want 6", f)
	}
	if f := c.From(10*sec + int64(SeqGapGrace) + 1); f != 9 || len(c.gaps) != 1 {
		t.Fatalf("from past the grace of 7 = %d (gaps %v), want 9", f, c.gaps)
	}
	if f := c.From(12*sec + int64(SeqGapGrace) + 1); f != 11 || len(c.gaps) != 0 {
		t.Fatalf("from with every gap given up = %d (gaps %v), want top 11", f, c.gaps)
	}
	// Re-reads below top change nothing.
	c.Saw(seqPage(5, 6, 11), 100*sec)
	if c.top != 11 || len(c.gaps) != 0 {
		t.Fatalf("after a re-read: top %d gaps %v", c.top, c.gaps)
	}
}

// At most MaxSeqGaps ranges are kept, the newest.
func TestSeqCursorGapCap(t *testing.T) {
	var c SeqCursor
	var seqs []int64
	for i := range int64(MaxSeqGaps + 10) {
		seqs = append(seqs, 2*i+2) // 1, 3, 5, ... missing
	}
	c.Saw(seqPage(seqs...), 0)
	if len(c.gaps) != MaxSeqGaps || c.gaps[len(c.gaps)-1].lo != c.top-1 || c.gaps[0].lo != 21 {
		t.Errorf("%d gaps from %v to %v, want %d ending below top %d", len(c.gaps), c.gaps[0], c.gaps[len(c.gaps)-1], MaxSeqGaps, c.top)
	}
}
