package webhook

import (
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// messagesFor turns a page of outbox events (their cursors, and rendered,
// each event as Render made it; a zero Type: not for webhooks) into the
// endpoint's messages: one per event it wants, its click events gathered
// by Batch when Batch > 1. It returns the messages and the cursor to
// store with them: past the page, or, while a batch is still filling
// (fewer than Batch clicks, the first younger than BatchWait), at the
// event before its first click, so that the next page starts there.
func messagesFor(e Endpoint, cursors []link.EventCursor, rendered []Rendered, from link.EventCursor, now time.Time) ([]Message, link.EventCursor) {
	var msgs []Message
	var batch []Rendered // one array for every batch: a message's body is a copy
	cursor, beforeBatch := from, from
	msgsBefore := 0 // len(msgs) when the filling batch began
	for i, r := range rendered {
		if r.Type == "" || !e.Wants(r.Type, r.Code, r.Tags) {
			cursor = cursors[i]
			continue
		}
		if r.Type == TypeClick && e.Batch > 1 {
			if len(batch) == 0 {
				beforeBatch, msgsBefore = cursor, len(msgs)
			}
			batch = append(batch, r)
			cursor = cursors[i]
			if len(batch) == e.Batch {
				msgs, batch = appendBatch(msgs, batch, now), batch[:0]
			}
			continue
		}
		if m, ok := single(r, now); ok {
			msgs = append(msgs, m)
		}
		cursor = cursors[i]
	}
	if len(batch) > 0 {
		if now.Sub(batch[0].At) < e.BatchWait {
			// Wait for more clicks: the batch's first click and what
			// follows it are read again next time.
			return msgs[:msgsBefore], beforeBatch
		}
		msgs = appendBatch(msgs, batch, now)
	}
	return msgs, cursor
}

func single(r Rendered, now time.Time) (Message, bool) {
	body, err := Body(r)
	if err != nil {
		return Message{}, false // Data is not JSON: Render's fault, nothing to send
	}
	return Message{ID: NewID(now), Type: r.Type, At: r.At, Body: body, Events: 1, NextAt: now}, true
}

func appendBatch(msgs []Message, batch []Rendered, now time.Time) []Message {
	body := appendBatchBody(newBody(), batch)
	return append(msgs, Message{ID: NewID(now), Type: TypeClickBatch, At: batch[0].At, Body: body, Events: len(batch), NextAt: now})
}
