package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of a delivery.
const (
	// DefaultTimeout bounds a delivery when Client.Timeout is zero.
	DefaultTimeout = 10 * time.Second
	// MaxAnswerBytes is the most of an answer's body a delivery reads;
	// the connection is closed after it.
	MaxAnswerBytes = 64 << 10
	// KeptAnswerBytes is how much of the answer's body an Attempt keeps
	// for the attempt log.
	KeptAnswerBytes = 1 << 10
)

// maxIdlePerHost is how many idle connections a Client keeps per
// receiver host: more than a dispatcher sends to one endpoint at once,
// so a busy endpoint's deliveries reuse connections.
const maxIdlePerHost = 64

// writeBufferBytes is the write buffer of a connection to a receiver.
const writeBufferBytes = 64 << 10

// userAgent identifies deliveries to receivers.
const userAgent = "caddy-edgekit-webhooks/1"

// Client sends deliveries. It reaches only addresses an operator allows:
// private, loopback, link-local, unspecified, multicast and other
// reserved addresses are refused unless inside Allow, judged at connect
// time on the address dialed (see CheckTarget). It ignores the
// HTTP(S)_PROXY environment, never follows redirects (a 3xx is the
// answer), reads at most MaxAnswerBytes of an answer and bounds each
// delivery by Timeout. Set the fields before the first Send; a Client is
// then safe for concurrent use, and keeps up to 64 idle connections per
// host for the next deliveries (a pooled connection was checked when it
// was dialed). Bounding deliveries in flight per endpoint is the
// caller's business: Send blocks for at most Timeout, and Throttle
// outcomes say when to send less.
type Client struct {
	// Timeout bounds a delivery from connecting to the end of reading
	// the answer, so a receiver that stalls or streams forever is cut.
	// Default: `10s`.
	Timeout time.Duration
	// Allow lists prefixes the client may reach even though they are
	// private or reserved (an operator's own receivers: 10.0.0.0/8).
	// IPv4 prefixes are written as such: an IPv4-mapped IPv6 address is
	// judged as the IPv4 address it maps. Default: none.
	Allow []netip.Prefix
	// LookupNetIP resolves host names; nil means net.DefaultResolver.
	LookupNetIP func(ctx context.Context, network, host string) ([]netip.Addr, error)

	now  func() time.Time        // the clock Retry-After dates are read against; nil is time.Now
	tls  *tls.Config             // nil: the system's roots (tests trust their own)
	wrap func(net.Conn) net.Conn // tests: wraps each connection dialed
	once sync.Once
	hc   *http.Client
}

// Attempt is what one delivery did: what the attempt log keeps.
type Attempt struct {
	// Status is the answer's status code, 0 if there was none.
	Status int
	// Latency is the time from the start of the delivery to the end of
	// reading the answer (or the failure).
	Latency time.Duration
	// Body is the start of the answer's body, at most KeptAnswerBytes.
	Body []byte
	// Err is why the delivery failed to get or read an answer: a
	// refused address (errors.Is ErrForbiddenAddress), a connection
	// error, the timeout. Nil when an answer was read, whatever its status.
	Err error
	// RetryAfter is the answer's Retry-After (ParseRetryAfter), 0 if none.
	RetryAfter time.Duration
}

// Outcome classifies the attempt (Classify).
func (a Attempt) Outcome() Outcome { return Classify(a.Status, a.Err) }

// Send POSTs body with the headers hdr (Headers) to url and reports the
// attempt. It never returns before reading the answer, up to
// MaxAnswerBytes, or failing; ctx can end it sooner than Timeout.
func (c *Client) Send(ctx context.Context, url string, hdr http.Header, body []byte) Attempt {
	return c.sendBody(ctx, url, hdr, body, false)
}

// sendBody is Send; with lent, body came from BodyBuffer and goes back to
// the pool once the transport is done with it (the caller must not use it
// after).
func (c *Client) sendBody(ctx context.Context, url string, hdr http.Header, body []byte, lent bool) Attempt {
	c.once.Do(c.init)
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	a := c.send(ctx, url, hdr, body, lent)
	a.Latency = time.Since(start)
	return a
}

// send makes the request and reads the answer.
func (c *Client) send(ctx context.Context, url string, hdr http.Header, body []byte, lent bool) Attempt {
	var r io.Reader = bytes.NewReader(body)
	var getBody func() (io.ReadCloser, error)
	if lent {
		l := &lentBuffer{buf: body, free: releaseBody}
		l.refs.Store(1) // this call's: the transport replays the body (GetBody) only within Do
		defer l.release()
		r, getBody = l.reader(), func() (io.ReadCloser, error) { return l.reader(), nil }
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, r)
	if err != nil {
		return Attempt{Err: err}
	}
	if lent {
		req.ContentLength, req.GetBody = int64(len(body)), getBody
	}
	if err := checkScheme(req.URL); err != nil {
		return Attempt{Err: err}
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := c.hc.Do(req)
	if err != nil {
		return Attempt{Err: err}
	}
	defer resp.Body.Close()
	a := Attempt{Status: resp.StatusCode, RetryAfter: ParseRetryAfter(resp.Header.Get("Retry-After"), c.clock())}
	a.Body, a.Err = readAnswer(resp.Body)
	return a
}

// lentBuffer is a body from BodyBuffer, back to the pool once nothing reads
// it: not the call sending it, nor any reader the transport was given
// (the first, or one GetBody made to send it again on a fresh connection;
// the transport closes each when done with it, also on errors, perhaps
// after Do has returned).
type lentBuffer struct {
	buf  []byte
	refs atomic.Int32
	free func([]byte) // releaseBody
}

func (l *lentBuffer) release() {
	if l.refs.Add(-1) == 0 {
		l.free(l.buf)
	}
}

func (l *lentBuffer) reader() *lentReader {
	l.refs.Add(1)
	return &lentReader{Reader: bytes.NewReader(l.buf), l: l}
}

type lentReader struct {
	*bytes.Reader
	l      *lentBuffer
	closed atomic.Bool
}

func (r *lentReader) Close() error {
	if !r.closed.Swap(true) {
		r.l.release()
	}
	return nil
}

// readAnswer reads at most MaxAnswerBytes of an answer and keeps the
// first KeptAnswerBytes; what is beyond is never read.
func readAnswer(r io.Reader) ([]byte, error) {
	r = io.LimitReader(r, MaxAnswerBytes)
	kept := make([]byte, KeptAnswerBytes)
	n, err := io.ReadFull(r, kept)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return kept[:n], nil
	}
	if err == nil {
		_, err = io.Copy(io.Discard, r)
	}
	return kept[:n], err
}

// init builds the HTTP client from the fields.
func (c *Client) init() {
	c.hc = &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil, // never HTTP(S)_PROXY: the proxy would dial what we refuse
			DialContext:            c.dial,
			TLSClientConfig:        c.tls,
			ForceAttemptHTTP2:      true,
			MaxIdleConnsPerHost:    maxIdlePerHost,
			IdleConnTimeout:        90 * time.Second,
			DisableCompression:     true, // count the bytes the receiver sends
			MaxResponseHeaderBytes: MaxAnswerBytes,
			// A request's head and a body of up to this size leave in one
			// write (the default 4 KiB sends a batch of clicks in two, the
			// receiver woken for each).
			WriteBufferSize: writeBufferBytes,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *Client) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}
