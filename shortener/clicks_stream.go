package shortener

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stream entry fields: the batch ID and the clicks, one per line as
// "code \t unix-ms \t class \t referrer".
const (
	fieldBatch  = "batch"
	fieldClicks = "clicks"
)

// xadd appends one stream entry per batch in one pipeline. A retry after an
// ambiguous failure may append a batch twice; the sink skips the second by
// its batch ID.
func (r *ClickRecorder) xadd(ctx context.Context, batches []ClickBatch) error {
	_, err := r.cfg.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, b := range batches {
			p.XAdd(ctx, &redis.XAddArgs{
				Stream: r.stream,
				MaxLen: r.cfg.StreamMaxLen,
				Approx: true,
				Values: []string{fieldBatch, b.ID, fieldClicks, encodeClicks(b.Clicks)},
			})
		}
		// No key lives forever: the stream goes a week after its last write.
		p.Expire(ctx, r.stream, 7*24*time.Hour)
		return nil
	})
	return err
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
		class, ref, ok3 := strings.Cut(rest, "\t")
		if !ok1 || !ok2 || !ok3 || code == "" || len(class) != 1 || class[0] < '0' || class[0] > '0'+byte(ClassOther) {
			return nil, fmt.Errorf("malformed click %q", line)
		}
		t, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("malformed click time %q", ms)
		}
		out = append(out, Click{Code: code, At: time.UnixMilli(t).UTC(), Referrer: ref, Class: UAClass(class[0] - '0')})
	}
	return out, nil
}
