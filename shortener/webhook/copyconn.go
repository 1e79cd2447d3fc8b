package webhook

import (
	"io"
	"net"
	"sync"
)

// copyConn is a connection whose ReadFrom copies through a pooled buffer.
// The HTTP transport writes a request body with its connection's
// ReadFrom, and a TCP connection's, given a body that is neither a file
// nor a socket, makes a 32 KiB buffer for each body: a busy endpoint's
// bodies (click batches of tens of KiB, hundreds a second) would be
// copied through as many new buffers.
type copyConn struct {
	net.Conn
	w writerOnly // the Conn, as io.CopyBuffer's destination
}

func newCopyConn(c net.Conn) *copyConn { return &copyConn{Conn: c, w: writerOnly{c}} }

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadFrom implements io.ReaderFrom.
func (c *copyConn) ReadFrom(r io.Reader) (int64, error) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	return io.CopyBuffer(&c.w, r, *buf)
}

// writerOnly hides its writer's ReadFrom from io.CopyBuffer, which would
// call it rather than use the buffer.
type writerOnly struct{ io.Writer }
