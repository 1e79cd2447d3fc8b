package webhook

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"
)

// TypeClickBatch is the type of a message carrying several click events
// (an endpoint with Batch > 1): its data is {"clicks": [...]}, each
// element a click event's data.
const TypeClickBatch = "click.batch"

// Rendered is an outbox event as webhooks send it.
type Rendered struct {
	Type string          // the event type (EventTypes)
	At   time.Time       // when it happened
	Data json.RawMessage // the payload's data
	Code string          // the link's code, "" for an event of no link
	Tags []string        // the link's tags, for endpoints' tag filters
}

// Body is the JSON body of a message of one event. Data must be JSON
// (Render's); a body that is not is refused.
func Body(r Rendered) ([]byte, error) {
	b := make([]byte, 0, 64+len(r.Data))
	b = appendHead(b, r.Type, r.At)
	b = append(append(b, r.Data...), '}')
	return valid(b)
}

// BatchBody is the JSON body of a message of several click events:
// {"clicks": [...]} of their data. Click data is JSON by construction
// (clicks.ClickEvent.AppendJSON writes it, the embedded store at each
// read, PostgreSQL keeps it as jsonb), so unlike Body it is not parsed
// again: at the click rate that would be a sizable share of delivering.
func BatchBody(clicks []Rendered) []byte {
	n := batchHeadBytes
	for _, c := range clicks {
		n += len(c.Data) + 1
	}
	b := openBatchBody(make([]byte, 0, n), clicks[0].At)
	for i, c := range clicks {
		b = appendBatchClick(b, i, c.Data)
	}
	return closeBatchBody(b)
}

// A batch body written a click at a time: openBatchBody under the first
// click's time, appendBatchClick for the i-th click's data, then
// closeBatchBody.
func openBatchBody(b []byte, at time.Time) []byte {
	return append(appendHead(b, TypeClickBatch, at), `{"clicks":[`...)
}

func appendBatchClick(b []byte, i int, data []byte) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	return append(b, data...)
}

func closeBatchBody(b []byte) []byte { return append(b, "]}}"...) }

// batchHeadBytes is room for a batch body's head and end: its type and
// timestamp, `{"clicks":[` and `]}}`.
const batchHeadBytes = 96

// appendHead appends {"type":…,"timestamp":…,"data": (types are this
// package's constants: no escaping needed).
func appendHead(b []byte, typ string, at time.Time) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","timestamp":"`...)
	b = at.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `","data":`...)
}

// valid returns b if it is JSON: built from events' data, it is unless a
// stored event was damaged.
func valid(b []byte) ([]byte, error) {
	if !json.Valid(b) {
		return nil, errors.New("webhook: an event's data is not JSON")
	}
	return b, nil
}

// bodies keeps message bodies' memory once they are sent (Due's, lent to
// the transport) or enqueued (the batches a round made): a busy endpoint
// makes hundreds of messages a second of tens of KiB each.
// Not a sync.Pool: that is emptied every other garbage collection, and a
// busy Caddy collects several times between two rounds of an endpoint,
// so most bodies would be new allocations. Up to maxFreeBodies bytes are
// kept, for as long as the process runs.
var bodies struct {
	mu    sync.Mutex
	free  [][]byte
	bytes int // the capacity kept in free
}

// maxPooledBody: a larger body is left to the garbage collector.
const maxPooledBody = 1 << 20

// maxFreeBodies bounds the memory bodies keeps: the messages of a round's
// 10,000 clicks (maxRoundEvents) in batches of 100, 2.5 MB, fit thrice.
const maxFreeBodies = 8 << 20

// newBody is an empty body, of the memory a sent one left if any.
func newBody() []byte {
	bodies.mu.Lock()
	defer bodies.mu.Unlock()
	n := len(bodies.free)
	if n == 0 {
		return nil
	}
	b := bodies.free[n-1]
	bodies.free[n-1] = nil
	bodies.free = bodies.free[:n-1]
	bodies.bytes -= cap(b)
	return b[:0]
}

// BodyBuffer is n bytes of the memory the dispatcher gives back once a
// message is sent: what a Store's Due returns bodies in when they would
// otherwise be a copy of their own (bbolt's memory lives as long as its
// transaction).
func BodyBuffer(n int) []byte { return emptyBody(n)[:n] }

// emptyBody is an empty body of capacity n or more.
func emptyBody(n int) []byte { return slices.Grow(newBody(), n) }

// releaseBody keeps b's memory for the next body, unless it is too large
// or bodies holds enough; b must not be used after.
func releaseBody(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledBody {
		return
	}
	bodies.mu.Lock()
	defer bodies.mu.Unlock()
	if bodies.bytes+cap(b) > maxFreeBodies {
		return
	}
	bodies.free = append(bodies.free, b)
	bodies.bytes += cap(b)
}

// releaseBodies gives the messages' bodies to bodies; msgs must not be
// used after.
func releaseBodies(msgs []Message) {
	for i := range msgs {
		releaseBody(msgs[i].Body)
		msgs[i].Body = nil
	}
}
