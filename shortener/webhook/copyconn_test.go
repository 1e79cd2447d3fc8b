package webhook

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// countingConn is a connection that counts what is written to it.
type countingConn struct {
	net.Conn
	n int
}

func (c *countingConn) Write(b []byte) (int, error) { c.n += len(b); return len(b), nil }

// TestCopyConnReadFrom: the transport's write of a request body (its
// connection's ReadFrom, the body behind an io.LimitedReader) copies it
// whole through a pooled buffer: no allocation per body.
func TestCopyConnReadFrom(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 5000) // 80 KB: three buffers' worth
	sink := &countingConn{}
	c := newCopyConn(sink)
	var br bytes.Reader
	lr := &io.LimitedReader{}
	send := func() {
		br.Reset(body)
		lr.R, lr.N = &br, int64(len(body))
		if n, err := c.ReadFrom(lr); n != int64(len(body)) || err != nil {
			t.Fatalf("copied %d of %d bytes: %v", n, len(body), err)
		}
	}
	send()
	if sink.n != len(body) {
		t.Fatalf("the connection got %d bytes of %d", sink.n, len(body))
	}
	if a := testing.AllocsPerRun(100, send); a > 0 {
		t.Errorf("%v allocations per body", a)
	}
}

// writesConn counts the writes made on a connection.
type writesConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c writesConn) Write(b []byte) (int, error) { c.writes.Add(1); return c.Conn.Write(b) }

// TestOneWritePerDelivery: a delivery's head and a body of a batch's size
// (25 KB) leave in one write on the connection, on a fresh connection and
// on a reused one; a body larger than the write buffer in more.
func TestOneWritePerDelivery(t *testing.T) {
	srv := receiver(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	var writes atomic.Int32
	c := &Client{Allow: loopback, wrap: func(c net.Conn) net.Conn { return writesConn{c, &writes} }}
	s := NewSecret()
	for i, size := range []int{25 << 10, 25 << 10, 100, 3 * writeBufferBytes} {
		body := bytes.Repeat([]byte("a"), size)
		hdr, err := Headers(NewID(time.Now()), time.Now(), body, s)
		if err != nil {
			t.Fatal(err)
		}
		writes.Store(0)
		if a := c.Send(context.Background(), srv.URL+"/hook", hdr, body); a.Status != 200 {
			t.Fatalf("delivery %d: %+v", i, a)
		}
		if n := writes.Load(); size <= writeBufferBytes/2 && n != 1 || size > writeBufferBytes && n < 2 {
			t.Errorf("a delivery of a %d-byte body took %d writes", size, n)
		}
	}
}
