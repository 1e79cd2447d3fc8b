package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Fault is what a FaultProxy does to traffic.
type Fault int

// Faults a FaultProxy can inject.
const (
	Pass    Fault = iota // forward both ways
	Stalled              // accept and forward nothing (the peer never answers)
	Refuse               // close new connections at once
)

// FaultProxy sits between a client and a server (Redis, PostgreSQL) on a
// loopback port and injects faults: latency, stalls, refusals and cuts of
// live connections. Its Addr is what the client dials.
type FaultProxy struct {
	t        testing.TB
	l        net.Listener
	upstream string

	mu      sync.Mutex
	fault   Fault
	latency time.Duration
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// StartFaultProxy proxies a free loopback port to upstream until the test ends.
func StartFaultProxy(t testing.TB, upstream string) *FaultProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{t: t, l: l, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *FaultProxy) Addr() string { return p.l.Addr().String() }

// Set changes the fault for traffic from now on (Stalled also freezes live connections).
func (p *FaultProxy) Set(f Fault) {
	p.mu.Lock()
	p.fault = f
	p.mu.Unlock()
}

// SetLatency delays every chunk forwarded in either direction.
func (p *FaultProxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// Cut closes every live connection (the server "crashed"); new ones still follow the current fault.
func (p *FaultProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Close stops the proxy and cuts everything.
func (p *FaultProxy) Close() {
	p.l.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *FaultProxy) state() (Fault, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fault, p.latency
}

func (p *FaultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[c] = struct{}{}
	return true
}

func (p *FaultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if f, _ := p.state(); f == Refuse {
			c.Close()
			continue
		}
		p.track(c)
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *FaultProxy) serve(c net.Conn) {
	defer p.wg.Done()
	up, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.track(up)
	var done sync.WaitGroup
	done.Add(2)
	go func() { defer done.Done(); p.pipe(up, c) }()
	go func() { defer done.Done(); p.pipe(c, up) }()
	done.Wait()
	c.Close()
	up.Close()
}

// pipe copies src to dst chunk by chunk, applying the current fault.
func (p *FaultProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			for {
				f, lat := p.state()
				if f == Stalled {
					time.Sleep(5 * time.Millisecond)
					if _, ok := p.live(src); !ok {
						return
					}
					continue
				}
				if lat > 0 {
					time.Sleep(lat)
				}
				break
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			}
			if tc, ok := dst.(*net.TCPConn); ok && err == io.EOF {
				_ = tc.CloseWrite()
			}
			return
		}
	}
}

func (p *FaultProxy) live(c net.Conn) (net.Conn, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.conns[c]
	return c, ok
}
