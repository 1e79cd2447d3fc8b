package ratelimit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// slowBodyServer serves h on a real HTTP server whose next handler reads
// the body to its end, as reverse_proxy streams it (reads), or never reads
// it and holds the request until its client is gone (or the test ends). The server sets no
// read timeout: like Caddy's read_idle_timeout, which every byte resets,
// it never stops a client sending one byte a second.
func slowBodyServer(t *testing.T, h *Handler, reads bool) *httptest.Server {
	t.Helper()
	release := make(chan struct{}) // the test ended: a held request returns
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if !reads && r.ContentLength > 1 {
			select { // a handler never reading the body never sees its client leave
			case <-r.Context().Done():
			case <-release:
			}
			return caddyhttp.Error(http.StatusGatewayTimeout, r.Context().Err())
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return caddyhttp.Error(http.StatusBadGateway, err)
		}
		w.WriteHeader(http.StatusOK)
		return nil
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
		if err := h.ServeHTTP(w, r, next); err != nil {
			status := http.StatusInternalServerError
			if he, ok := err.(caddyhttp.HandlerError); ok {
				status = he.StatusCode
			}
			w.WriteHeader(status)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // first: srv.Close waits for the held request
	return srv
}

// TestConcurrencySlowBodyLosesSlot: a client admitted to a concurrency
// zone of one slot that sends its body at 1 byte/s loses the slot within
// body_timeout + lease_ttl: another request of the same key gets it,
// whether the next handler reads the body (its read fails) or never does
// (the lease is no longer refreshed).
func TestConcurrencySlowBodyLosesSlot(t *testing.T) {
	for _, reads := range []bool{true, false} {
		t.Run(fmt.Sprintf("next reads the body %v", reads), func(t *testing.T) { slowBodyLosesSlot(t, reads) })
	}
}

func slowBodyLosesSlot(t *testing.T, reads bool) {
	const ttl, bodyTimeout = time.Second, 2 * time.Second
	h := concHandler(nil, 1, ttl)
	h.Zones[0].BodyTimeout = caddy.Duration(bodyTimeout)
	provision(t, h)
	srv := slowBodyServer(t, h, reads)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nX-API-Key: k\r\nContent-Length: 100000\r\n\r\n")
	admitted := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // 1 byte/s
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
				if _, err := conn.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()

	post := func() int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x"))
		req.Header.Set("X-API-Key", "k")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("second client: %v", err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	time.Sleep(300 * time.Millisecond)
	if s := post(); s != http.StatusTooManyRequests {
		t.Fatalf("while the slow client holds the slot: status %d, want 429", s)
	}
	bound := bodyTimeout + ttl
	for time.Since(admitted) < bound+3*time.Second {
		if s := post(); s == http.StatusOK {
			took := time.Since(admitted)
			t.Logf("slot free again %v after the slow client's admission (bound %v)", took.Round(time.Millisecond), bound)
			if took > bound+time.Second {
				t.Errorf("slot free after %v, want within body_timeout + lease_ttl = %v", took, bound)
			}
			// The slow client's request ended with its failed read.
			_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			if res, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
				res.Body.Close()
				t.Logf("slow client answered %d", res.StatusCode)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the slow client still holds the slot %v after its admission (body_timeout %v, lease_ttl %v)", time.Since(admitted), bodyTimeout, ttl)
}
