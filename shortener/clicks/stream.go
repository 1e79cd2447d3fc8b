package clicks

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Stream entry fields: the batch ID, the clicks, one per line as
// "code \t unix-ms \t class \t referrer \t device \t os \t browser
// \t visitor \t country \t region \t city \t source \t rule \t variant"
// (the visitor hash as 16 hex digits, "" when unknown; source "qr" for a
// scan of the link's QR code, else ""; the destination rule and variant,
// "" for none), how many, and the running byte offset the append script
// keeps (scripts/clicks_append.lua). Lines of earlier versions stop after
// the referrer, the browser, the visitor, the city or the source: the
// fields they lack are "" (0 for the visitor).
const (
	FieldBatch  = "batch"
	FieldClicks = "clicks"
	FieldCount  = "n"
)

// The stream's bounds. An entry is at most maxStreamEntry bytes as the
// script counts them (batch ID, at most MaxBatchBytes of clicks, 64 bytes
// of overhead): so the stream holds at most clicks_stream_bytes of entries.
const (
	clickStreamTTL      = 7 * 24 * time.Hour
	StreamEntryOverhead = 64
	maxBatchIDLen       = 128
	maxStreamEntry      = MaxBatchBytes + maxBatchIDLen + StreamEntryOverhead
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
func (r *Recorder) xadd(ctx context.Context, batches []Batch) error {
	args := make([]any, 0, 4+3*len(batches))
	args = append(args, r.Cfg.StreamMaxBytes, r.Cfg.StreamMaxLen, int64(clickStreamTTL/time.Second), maxStreamEntry)
	for _, b := range batches {
		args = append(args, b.ID, EncodeClicks(b.Clicks), len(b.Clicks))
	}
	res, err := clicksAppendScript.Run(ctx, r.Cfg.Redis, []string{r.Stream}, args...).Int64Slice()
	if err != nil {
		return err
	}
	if len(res) != 2 || res[0] < 0 || res[1] < 0 {
		return fmt.Errorf("click append script: unexpected reply %v", res)
	}
	if res[0] > 0 {
		r.drop(DropStreamTrimmed, int(res[1]))
		r.logger.Warn("click stream at its cap: the oldest entries were trimmed before any consumer counted them",
			slog.Int64("entries", res[0]), slog.Int64("clicks", res[1]),
			slog.Int64("stream_max_bytes", r.Cfg.StreamMaxBytes), slog.Int64("stream_max_len", r.Cfg.StreamMaxLen))
	}
	return nil
}

func EncodeClicks(clicks []Click) string {
	var sb strings.Builder
	sb.Grow(len(clicks) * 48)
	for _, c := range clicks {
		sb.WriteString(c.Code)
		sb.WriteByte('\t')
		sb.WriteString(strconv.FormatInt(c.At.UnixMilli(), 10))
		sb.WriteByte('\t')
		sb.WriteByte('0' + byte(c.Class))
		for _, f := range [...]string{c.Referrer, c.Device, c.OS, c.Browser, visitorHex(c.Visitor), c.Country, c.Region, c.City, clickSource(c.QR), c.Rule, c.Variant} {
			sb.WriteByte('\t')
			sb.WriteString(f)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func visitorHex(v uint64) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("%016x", v)
}

// clickFields is how many tab-separated fields a stream line has now;
// lines of earlier versions have 4, 7, 8, 11 or 12.
const clickFields = 14

// sourceQR is the source field of a scan.
const sourceQR = SourceQR

func clickSource(qr bool) string {
	if qr {
		return sourceQR
	}
	return ""
}

func DecodeClicks(s string) ([]Click, error) {
	out := make([]Click, 0, strings.Count(s, "\n"))
	var f [clickFields]string
	for line := range strings.Lines(s) {
		line = strings.TrimSuffix(line, "\n")
		n := splitTabs(line, f[:])
		if n != 4 && n != 7 && n != 8 && n != 11 && n != 12 && n != clickFields {
			return nil, fmt.Errorf("malformed click %q", line)
		}
		c, err := decodeClick(f)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// splitTabs splits line at tabs into f, the fields past len(f) left in
// the last one, and says how many fields it found (len(f)+1 when there
// are too many); fields it does not reach are "".
func splitTabs(line string, f []string) int {
	clear(f)
	for i := range f {
		field, rest, more := strings.Cut(line, "\t")
		f[i] = field
		if !more {
			return i + 1
		}
		line = rest
	}
	return len(f) + 1
}

func decodeClick(f [clickFields]string) (Click, error) {
	code, ms, class := f[0], f[1], f[2]
	c := Click{Code: code, Referrer: f[3], Device: f[4], OS: f[5], Browser: f[6], Country: f[8], Region: f[9], City: f[10],
		QR: f[11] == sourceQR, Rule: f[12], Variant: f[13]}
	if f[11] != "" && f[11] != sourceQR {
		return Click{}, fmt.Errorf("malformed click source %q", f[11])
	}
	if vis := f[7]; vis != "" {
		v, err := strconv.ParseUint(vis, 16, 64)
		if err != nil || len(vis) != 16 || v == 0 {
			return Click{}, fmt.Errorf("malformed click visitor %q", vis)
		}
		c.Visitor = v
	}
	if !link.ValidKey(code) || !ValidReferrerHost(c.Referrer) ||
		len(class) != 1 || class[0] < '0' || class[0] > '0'+byte(ClassOther) ||
		!validDim(c.Device) || !validDim(c.OS) || !validDim(c.Browser) || !validGeo(c) || !validTargetDims(c) {
		return Click{}, fmt.Errorf("malformed click %q", strings.Join(f[:], "\t"))
	}
	t, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return Click{}, fmt.Errorf("malformed click time %q", ms)
	}
	c.At, c.Class = time.UnixMilli(t).UTC(), UAClass(class[0]-'0')
	return c, nil
}
