package ratelimit

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// A concurrency zone's slow bodies. A request holds its lease as long as
// it is in flight, and Caddy's server alone does not bound how long a
// client may take to send a body: read_idle_timeout is reset by every
// byte, so one byte a second keeps a request, and its slot, alive for
// ever. So a request admitted with a body (Content-Length not 0) must
// have sent all of it within its zones' body_timeout (the shortest of
// them): past it, its leases are no longer refreshed (the slots are free
// again within lease_ttl, whatever the next handler does) and its next
// body read fails, which ends a handler reading the body (reverse_proxy
// answers 502, the leases are given back). A body read to its end in
// time releases nothing.

// DefaultBodyTimeout is a concurrency zone's body_timeout when none is set.
const DefaultBodyTimeout = time.Minute

// errBodyTimeout is the error of a body read past the deadline.
var errBodyTimeout = errors.New("rate limit: request body not received within the concurrency zone's body_timeout")

// bodyWatch is the deadline of a request's body: shared by its leases
// (the refresher reads it) and its body reader.
type bodyWatch struct {
	deadline time.Time
	done     atomic.Bool // the body was read to its end
}

// expired reports whether the body is still not received at now, past
// the deadline; false for nil (no body).
func (b *bodyWatch) expired(now time.Time) bool {
	return b != nil && !b.done.Load() && now.After(b.deadline)
}

// deadlineBody is a request body whose reads fail past its deadline.
type deadlineBody struct {
	io.ReadCloser
	w *bodyWatch
}

func (d *deadlineBody) Read(p []byte) (int, error) {
	if d.w.expired(time.Now()) {
		return 0, errBodyTimeout
	}
	n, err := d.ReadCloser.Read(p)
	if err == io.EOF {
		d.w.done.Store(true)
	}
	return n, err
}

// watchBody puts r's body under the shortest body_timeout of the
// concurrency zones whose leases rl holds, from now; nil when r has no
// body.
func watchBody(r *http.Request, timeout time.Duration) *bodyWatch {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	w := &bodyWatch{deadline: time.Now().Add(timeout)}
	r.Body = &deadlineBody{ReadCloser: r.Body, w: w}
	return w
}
