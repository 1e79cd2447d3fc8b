package shortener

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Stream entry fields: the batch ID, the clicks, one per line as
// "code \t unix-ms \t class \t referrer \t device \t os \t browser
// [\t visitor]" (an entry of an earlier version may stop after the
// referrer: its dimensions are then ""; the visitor hash, when known, as 16
// hex digits), how many, and the running byte offset the append script
// keeps (scripts/clicks_append.lua).
const (
	fieldBatch  = "batch"
	fieldClicks = "clicks"
	fieldCount  = "n"
)

// The stream's bounds. An entry is at most maxStreamEntry bytes as the
// script counts them (batch ID, at most maxBatchBytes of clicks, 64 bytes
// of overhead): so the stream holds at most clicks_stream_bytes of entries.
const (
	clickStreamTTL      = 7 * 24 * time.Hour
	streamEntryOverhead = 64
	maxBatchIDLen       = 128
	maxStreamEntry      = maxBatchBytes + maxBatchIDLen + streamEntryOverhead
)

//go:embed scripts/clicks_append.lua
var clicksAppendLua string

// clicksAppendScript appends batches and trims the stream to its caps in
// one atomic call; run with EVALSHA, EVAL on NOSCRIPT.
var clicksAppendScript = redis.NewScript(clicksAppendLua)

// xadd appends one stream entry per batch in one script call, which trims
// the oldest entries past the stream's caps and says how many clicks they
// held: those are counted as dropped (stream_trimmed). A retry after an
// ambiguous failure may append a batch twice; the sink skips the second by
// its batch ID.
func (r *ClickRecorder) xadd(ctx context.Context, batches []ClickBatch) error {
	args := make([]any, 0, 4+3*len(batches))
	args = append(args, r.cfg.StreamMaxBytes, r.cfg.StreamMaxLen, int64(clickStreamTTL/time.Second), maxStreamEntry)
	for _, b := range batches {
		args = append(args, b.ID, encodeClicks(b.Clicks), len(b.Clicks))
	}
	res, err := clicksAppendScript.Run(ctx, r.cfg.Redis, []string{r.stream}, args...).Int64Slice()
	if err != nil {
		return err
	}
	if len(res) != 2 || res[0] < 0 || res[1] < 0 {
		return fmt.Errorf("click append script: unexpected reply %v", res)
	}
	if res[0] > 0 {
		r.drop(dropStreamTrimmed, int(res[1]))
		r.logger.Warn("click stream at its cap: the oldest entries were trimmed before any consumer counted them",
			zap.Int64("entries", res[0]), zap.Int64("clicks", res[1]),
			zap.Int64("stream_max_bytes", r.cfg.StreamMaxBytes), zap.Int64("stream_max_len", r.cfg.StreamMaxLen))
	}
	return nil
}

func encodeClicks(clicks []Click) string {
	var sb strings.Builder
	sb.Grow(len(clicks) * 32)
	for _, c := range clicks {
		sb.WriteString(c.Code)
		sb.WriteByte('\t')
		sb.WriteString(strconv.FormatInt(c.At.UnixMilli(), 10))
		sb.WriteByte('\t')
		sb.WriteByte('0' + byte(c.Class))
		sb.WriteByte('\t')
		sb.WriteString(c.Referrer)
		for _, d := range [...]string{c.Device, c.OS, c.Browser} {
			sb.WriteByte('\t')
			sb.WriteString(d)
		}
		if c.Visitor != 0 {
			sb.WriteByte('\t')
			sb.WriteString(fmt.Sprintf("%016x", c.Visitor))
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func decodeClicks(s string) ([]Click, error) {
	out := make([]Click, 0, strings.Count(s, "\n"))
	for line := range strings.Lines(s) {
		line = strings.TrimSuffix(line, "\n")
		code, rest, ok1 := strings.Cut(line, "\t")
		ms, rest, ok2 := strings.Cut(rest, "\t")
		class, rest, ok3 := strings.Cut(rest, "\t")
		ref, dims, _ := strings.Cut(rest, "\t")
		device, dims, _ := strings.Cut(dims, "\t")
		os, dims, _ := strings.Cut(dims, "\t")
		browser, vis, hasVisitor := strings.Cut(dims, "\t")
		var visitor uint64
		if hasVisitor {
			v, err := strconv.ParseUint(vis, 16, 64)
			if err != nil || len(vis) != 16 || v == 0 {
				return nil, fmt.Errorf("malformed click visitor %q", vis)
			}
			visitor = v
		}
		if !ok1 || !ok2 || !ok3 || !ValidLookupCode(code) || !validReferrerHost(ref) ||
			len(class) != 1 || class[0] < '0' || class[0] > '0'+byte(ClassOther) ||
			!validDim(device) || !validDim(os) || !validDim(browser) {
			return nil, fmt.Errorf("malformed click %q", line)
		}
		t, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("malformed click time %q", ms)
		}
		out = append(out, Click{Code: code, At: time.UnixMilli(t).UTC(), Referrer: ref, Class: UAClass(class[0] - '0'),
			Device: device, OS: os, Browser: browser, Visitor: visitor})
	}
	return out, nil
}
