package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestLentBufferFreedOnceUnread: a lent body goes back to the pool once,
// when neither the call sending it nor any reader the transport got (the
// first, one GetBody made for a replay) still reads it, whatever the
// order, however often a reader is closed.
func TestLentBufferFreedOnceUnread(t *testing.T) {
	freed := 0
	l := &lentBuffer{buf: copyBody([]byte("body")), free: func([]byte) { freed++ }}
	l.refs.Store(1)
	first := l.reader()
	replay := l.reader() // GetBody
	steps := []func(){func() { _ = first.Close() }, l.release, func() { _ = first.Close() }, func() { _ = replay.Close() }}
	for i, step := range steps {
		if freed != 0 {
			t.Fatalf("freed before step %d", i)
		}
		step()
	}
	_ = replay.Close()
	if freed != 1 {
		t.Fatalf("freed %d times, want once", freed)
	}
}

// TestLentBodiesArriveWhole: 32 senders at once lend bodies of 1 KiB to
// 200 KiB (in BodyBuffer memory, as the dispatcher sends them) to a receiver that
// answers a third of them before reading the body (Do returns while the
// transport may still be writing it; the sender's context then ends):
// every body read whole is the one sent, never another message's bytes
// in a buffer reused too early.
func TestLentBodiesArriveWhole(t *testing.T) {
	var whole, cut, early, failed atomic.Int64
	srv := smallWindowReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Early") == "1" {
			// The answer before the body is read: Do returns while the
			// transport is still writing the body, which is read after.
			rc := http.NewResponseController(w)
			if err := rc.EnableFullDuplex(); err != nil {
				t.Error(err)
			}
			w.Header().Set("Content-Length", "0") // the answer is whole once flushed
			w.WriteHeader(http.StatusAccepted)
			if err := rc.Flush(); err != nil {
				t.Error(err)
			}
			early.Add(1)
			time.Sleep(20 * time.Millisecond) // the sender's buffer fills meanwhile
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			cut.Add(1) // answered early, then cut when the sender's context ended
			return
		}
		if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != r.Header.Get("X-Sum") {
			t.Errorf("message %s: a body of %d bytes that is not the one sent", r.Header.Get("X-Message"), len(body))
		}
		whole.Add(1)
	})
	c := &Client{Allow: loopback}
	const senders, each = 32, 20
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				src := make([]byte, 1024+rand.IntN(200<<10))
				for j := range src {
					src[j] = byte(g + i + j)
				}
				sum := sha256.Sum256(src)
				hdr := http.Header{"X-Sum": {hex.EncodeToString(sum[:])}, "X-Message": {fmt.Sprintf("%d-%d", g, i)}}
				if i%3 == 0 {
					hdr.Set("X-Early", "1")
				}
				body := copyBody(src)
				if !bytes.Equal(body, src) {
					t.Error("copyBody changed the body")
				}
				if a := c.sendBody(context.Background(), srv.URL, hdr, body, true); a.Err != nil { // body is the pool's from here
					failed.Add(1) // a connection an early answer's cut left behind, say
				}
			}
		})
	}
	wg.Wait()
	if whole.Load() < senders*each*9/10 || early.Load() == 0 {
		t.Fatalf("%d bodies compared (%d cut, %d sends failed), %d answered early; want most of %d, some early",
			whole.Load(), cut.Load(), failed.Load(), early.Load(), senders*each)
	}
}

// smallWindowReceiver is a loopback server whose connections read through
// a 4 KiB socket buffer: a body much larger stays partly in the sender's
// memory until the handler reads it.
func smallWindowReceiver(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); cerr != nil {
			return cerr
		}
		return err
	}}
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// copyBody is b in BodyBuffer memory, as Due returns bodies.
func copyBody(b []byte) []byte { return append(BodyBuffer(len(b))[:0], b...) }
