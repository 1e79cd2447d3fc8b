package webhook

import (
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// batcher turns an endpoint's outbox events, given in log order with
// their cursors and as Render made them (a zero Type: not for webhooks),
// into its messages: one per event it wants, its click events gathered
// by Batch when Batch > 1. A click's data is copied into its batch's body
// as it comes: the event's memory may be reused once add returns.
type batcher struct {
	e      Endpoint
	now    time.Time
	msgs   []Message
	cursor link.EventCursor // after the last event taken in
	// The batch filling: its body so far, its clicks, its first click's
	// time, and, from before that click, the cursor and len(msgs).
	body       []byte
	n          int
	first      time.Time
	before     link.EventCursor
	msgsBefore int
}

func newBatcher(e Endpoint, from link.EventCursor, now time.Time) *batcher {
	return &batcher{e: e, now: now, cursor: from}
}

func (b *batcher) add(cur link.EventCursor, r Rendered) {
	switch {
	case r.Type == "" || !b.e.Wants(r.Type, r.Code, r.Tags):
	case r.Type == TypeClick && b.e.Batch > 1:
		if b.n == 0 {
			b.before, b.msgsBefore, b.first = b.cursor, len(b.msgs), r.At
			// Sized for Batch clicks like this one: one allocation, not
			// a doubling per growth, when no body sent before has room.
			b.body = openBatchBody(emptyBody(b.e.Batch*(len(r.Data)+1)+batchHeadBytes), r.At)
		}
		b.body = appendBatchClick(b.body, b.n, r.Data)
		if b.n++; b.n == b.e.Batch {
			b.closeBatch()
		}
	default:
		if m, ok := single(r, b.now); ok {
			b.msgs = append(b.msgs, m)
		}
	}
	b.cursor = cur
}

func (b *batcher) closeBatch() {
	b.msgs = append(b.msgs, Message{ID: NewID(b.now), Type: TypeClickBatch, At: b.first, Body: closeBatchBody(b.body),
		Events: b.n, NextAt: b.now})
	b.body, b.n = nil, 0
}

// done returns the messages and the cursor to store with them: after the
// last event, or, while a batch is still filling (fewer than Batch clicks,
// the first younger than BatchWait), at the event before its first click,
// so that the next read starts there (the messages made since are left
// for then too).
func (b *batcher) done() ([]Message, link.EventCursor) {
	if b.n > 0 && b.now.Sub(b.first) < b.e.BatchWait {
		b.drop(b.msgsBefore)
		return b.msgs, b.before
	}
	if b.n > 0 {
		b.closeBatch()
	}
	return b.msgs, b.cursor
}

// drop gives back the bodies of the filling batch and of the messages
// from the keep-th on, and forgets them.
func (b *batcher) drop(keep int) {
	releaseBodies(append(b.msgs[keep:], Message{Body: b.body}))
	b.body, b.n = nil, 0
	b.msgs = b.msgs[:keep]
}

// messagesFor is a batcher's work on a page of events read at once.
func messagesFor(e Endpoint, cursors []link.EventCursor, rendered []Rendered, from link.EventCursor, now time.Time) ([]Message, link.EventCursor) {
	b := newBatcher(e, from, now)
	for i, r := range rendered {
		b.add(cursors[i], r)
	}
	return b.done()
}

func single(r Rendered, now time.Time) (Message, bool) {
	body, err := Body(r)
	if err != nil {
		return Message{}, false // Data is not JSON: Render's fault, nothing to send
	}
	return Message{ID: NewID(now), Type: r.Type, At: r.At, Body: body, Events: 1, NextAt: now}, true
}
