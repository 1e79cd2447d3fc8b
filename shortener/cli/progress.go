package cli

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress draws one line on a terminal: a bar of the bytes read when
// the file's size is known, the records so far and their rate. It is
// redrawn at most every 200 ms.
type progress struct {
	w           io.Writer
	read        *countingReader
	size        int64
	start, last time.Time
}

func newProgress(w io.Writer, read *countingReader, size int64) *progress {
	return &progress{w: w, read: read, size: size, start: time.Now()}
}

// tick redraws the line if it is due (or force).
func (p *progress) tick(records int, force bool) {
	if p == nil {
		return
	}
	now := time.Now()
	if !force && now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	rate := float64(records) / max(now.Sub(p.start).Seconds(), 0.001)
	bar := ""
	if p.size > 0 {
		pct := min(int(p.read.n*100/p.size), 100)
		bar = fmt.Sprintf("[%s%s] %3d%% ", strings.Repeat("#", pct*30/100), strings.Repeat(".", 30-pct*30/100), pct)
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s%d records, %.0f/s", bar, records, rate)
}

// clear removes the line before other output.
func (p *progress) clear() {
	if p != nil {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
