package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// loopback is the allow-list that lets a client reach httptest servers.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// receiver serves h on a loopback port until the test ends.
func receiver(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// signedMessage is a message and its headers, signed with s.
func signedMessage(t *testing.T, s Secret) (http.Header, []byte) {
	t.Helper()
	body := []byte(`{"type":"link.created","timestamp":"2026-12-06T08:00:00Z","data":{"code":"abc"}}`)
	h, err := Headers(NewID(time.Now()), time.Now(), body, s)
	if err != nil {
		t.Fatal(err)
	}
	return h, body
}

func TestSendDelivers(t *testing.T) {
	s := NewSecret()
	var verified atomic.Bool
	srv := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		verified.Store(r.Method == http.MethodPost && Verify(r.Header, body, time.Now(), s) == nil)
		io.WriteString(w, "thanks")
	})
	hdr, body := signedMessage(t, s)
	a := (&Client{Allow: loopback}).Send(context.Background(), srv.URL+"/hook", hdr, body)
	if a.Err != nil || a.Status != 200 || string(a.Body) != "thanks" || a.Outcome() != Delivered || a.Latency <= 0 {
		t.Fatalf("Send() = %+v, want a delivered 200 with the answer kept", a)
	}
	if !verified.Load() {
		t.Error("the receiver could not verify the message it got")
	}
}

func TestSendRefusesPrivateTargets(t *testing.T) {
	var hits atomic.Int32
	srv := receiver(t, func(http.ResponseWriter, *http.Request) { hits.Add(1) })
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	hdr, body := signedMessage(t, NewSecret())
	for _, url := range []string{srv.URL, "http://localhost" + port, "http://[::ffff:127.0.0.1]" + port} {
		a := (&Client{}).Send(context.Background(), url, hdr, body)
		if !errors.Is(a.Err, ErrForbiddenAddress) || a.Status != 0 || a.Outcome() != Retry {
			t.Errorf("Send(%s) by default = %+v, want ErrForbiddenAddress", url, a)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the private receiver got %d requests", hits.Load())
	}
	for _, url := range []string{srv.URL, "http://localhost" + port} {
		a := (&Client{Allow: loopback}).Send(context.Background(), url, hdr, body)
		if a.Err != nil || a.Status != 200 {
			t.Errorf("Send(%s) with 127.0.0.0/8 allowed = %+v, want 200", url, a)
		}
	}
}

func TestSendRefusesOtherSchemes(t *testing.T) {
	hdr, body := signedMessage(t, NewSecret())
	for _, url := range []string{"ftp://example.com/", "file:///etc/passwd", "://", "example.com/hook"} {
		if a := (&Client{}).Send(context.Background(), url, hdr, body); a.Err == nil {
			t.Errorf("Send(%q) = %+v, want an error", url, a)
		}
	}
}

func TestSendIgnoresProxyEnvironment(t *testing.T) {
	var proxied atomic.Int32
	proxy := receiver(t, func(http.ResponseWriter, *http.Request) { proxied.Add(1) })
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	srv := receiver(t, func(http.ResponseWriter, *http.Request) {})
	c := &Client{Allow: loopback, LookupNetIP: answer("127.0.0.1")}
	url := strings.Replace(srv.URL, "127.0.0.1", "receiver.example", 1) // not localhost, which proxies skip anyway
	hdr, body := signedMessage(t, NewSecret())
	if a := c.Send(context.Background(), url, hdr, body); a.Err != nil || a.Status != 200 || proxied.Load() != 0 {
		t.Errorf("Send() = %+v with %d proxied requests; want 200 straight from the receiver", a, proxied.Load())
	}
}

func TestSendDoesNotFollowRedirects(t *testing.T) {
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) })
	mux.HandleFunc("/elsewhere", func(http.ResponseWriter, *http.Request) { followed.Add(1) })
	srv := receiver(t, mux.ServeHTTP)
	hdr, body := signedMessage(t, NewSecret())
	a := (&Client{Allow: loopback}).Send(context.Background(), srv.URL+"/hook", hdr, body)
	if a.Status != http.StatusFound || a.Err != nil || a.Outcome() != Retry || followed.Load() != 0 {
		t.Errorf("Send() = %+v, %d followed; want the 302 itself, a failed attempt", a, followed.Load())
	}
}

func TestSendRecordsRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{"120", 2 * time.Minute},
		{now.Add(time.Hour).Format(http.TimeFormat), time.Hour},
		{"garbage", 0},
	} {
		srv := receiver(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", tc.value)
			http.Error(w, "overloaded", http.StatusInternalServerError)
		})
		hdr, body := signedMessage(t, NewSecret())
		c := &Client{Allow: loopback, now: func() time.Time { return now }}
		a := c.Send(context.Background(), srv.URL, hdr, body)
		if a.Status != 500 || a.RetryAfter != tc.want || a.Outcome() != Retry || string(a.Body) != "overloaded\n" {
			t.Errorf("Send() with Retry-After %q = %+v, want 500 and %v", tc.value, a, tc.want)
		}
	}
}

func TestSendCutsAnEndlessAnswer(t *testing.T) {
	cut := make(chan struct{})
	srv := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(cut)
		io.Copy(io.Discard, r.Body)
		chunk := []byte(strings.Repeat("x", 4096))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	hdr, body := signedMessage(t, NewSecret())
	a := (&Client{Allow: loopback, Timeout: 5 * time.Second}).Send(context.Background(), srv.URL, hdr, body)
	if a.Status != 200 || a.Err != nil || len(a.Body) != KeptAnswerBytes || a.Latency > 2*time.Second {
		t.Errorf("Send() to an endless answer = status %d, err %v, %d bytes kept, %v; want 200 cut at once",
			a.Status, a.Err, len(a.Body), a.Latency)
	}
	select {
	case <-cut: // the client closed the connection: the receiver's writes fail
	case <-time.After(5 * time.Second):
		t.Error("the receiver still streams 5s after Send returned")
	}
}

// countingReader is an endless answer that counts what is read of it.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	r.n += len(p)
	return len(p), nil
}

func TestReadAnswerStopsAt64KiB(t *testing.T) {
	r := &countingReader{}
	kept, err := readAnswer(r)
	if err != nil || len(kept) != KeptAnswerBytes || r.n != MaxAnswerBytes {
		t.Errorf("readAnswer(endless) kept %d bytes, read %d, err %v; want %d kept, %d read",
			len(kept), r.n, err, KeptAnswerBytes, MaxAnswerBytes)
	}
	kept, err = readAnswer(strings.NewReader("short"))
	if err != nil || string(kept) != "short" {
		t.Errorf("readAnswer(short) = %q, %v", kept, err)
	}
}

func TestSendTimesOut(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sendHeader bool
		wantStatus int
	}{
		{"before the headers", false, 0},
		{"in the body", true, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := receiver(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if tc.sendHeader {
					w.Write([]byte("partial"))
					w.(http.Flusher).Flush()
				}
				select {
				case <-r.Context().Done():
				case <-release:
				}
			})
			t.Cleanup(func() { close(release) }) // before the server closes
			hdr, body := signedMessage(t, NewSecret())
			a := (&Client{Allow: loopback, Timeout: 300 * time.Millisecond}).Send(context.Background(), srv.URL, hdr, body)
			if a.Status != tc.wantStatus || !errors.Is(a.Err, context.DeadlineExceeded) || a.Outcome() != Retry ||
				a.Latency < 300*time.Millisecond || a.Latency > 3*time.Second {
				t.Errorf("Send() to a stalled receiver = %+v, want status %d cut by the 300ms timeout", a, tc.wantStatus)
			}
		})
	}
}

// TestSendHTTPSByName: the client dials the checked IP, yet TLS verifies
// the receiver's certificate against the URL's name.
func TestSendHTTPSByName(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.TLS.ServerName)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate()) // valid for example.com and 127.0.0.1
	hdr, body := signedMessage(t, NewSecret())
	for name, ok := range map[string]bool{"example.com": true, "other.example": false} {
		c := &Client{Allow: loopback, LookupNetIP: answer("127.0.0.1"), tls: &tls.Config{RootCAs: roots}}
		a := c.Send(context.Background(), strings.Replace(srv.URL, "127.0.0.1", name, 1), hdr, body)
		if got := a.Err == nil && a.Status == 200 && string(a.Body) == name; got != ok {
			t.Errorf("Send(https://%s) = %+v, want delivered %v", name, a, ok)
		}
	}
}
