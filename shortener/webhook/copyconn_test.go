package webhook

import (
	"bytes"
	"io"
	"net"
	"testing"
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
