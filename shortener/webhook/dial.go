package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"

	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// This file is where a delivery meets the network: the host is resolved
// at connect time, each address judged, and only an allowed one dialed,
// by its IP. A name that answered with a public address when the endpoint
// was registered and answers with a private one now (DNS rebinding) is
// refused, since the address judged is the address dialed. The dialer's
// Control hook judges once more the socket address it connects to.

// ErrForbiddenAddress is wrapped by the error of a delivery (or of
// CheckTarget) whose host has no address the client may reach.
var ErrForbiddenAddress = errors.New("webhook: the target's address is private or reserved and not in the allow-list")

// CheckTarget reports whether the client may deliver to rawURL now: an
// http or https URL whose host resolves to at least one address the
// client may dial. The API calls it when an endpoint is created or
// changed; every delivery checks again at connect time. Resolving is
// bounded by the client's Timeout.
func (c *Client) CheckTarget(ctx context.Context, rawURL string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("webhook: parsing the target URL: %w", err)
	}
	if err := checkScheme(u); err != nil {
		return err
	}
	_, err = c.allowedAddrs(ctx, u.Hostname())
	return err
}

// errScheme refuses a target that is not an http or https URL with a host.
var errScheme = errors.New("webhook: the target must be an http or https URL with a host")

// checkScheme refuses what is not an http or https URL with a host.
func checkScheme(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" {
		return errScheme
	}
	return nil
}

// forbidden reports an address a delivery may not reach unless allowed:
// those urlpolicy.PrivateAddr names, and multicast and broadcast ones.
func forbidden(a netip.Addr) bool {
	a = a.Unmap()
	return urlpolicy.PrivateAddr(a) || a.IsMulticast() || a.IsUnspecified() ||
		a == netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// allowed reports an address the client may dial.
func (c *Client) allowed(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, p := range c.Allow {
		if p.Contains(a) {
			return true
		}
	}
	return !forbidden(a)
}

// allowedAddrs resolves host (an IP literal stands for itself) and keeps
// the addresses the client may dial, in the resolver's order.
func (c *Client) allowedAddrs(ctx context.Context, host string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = c.lookup(ctx, host); err != nil {
		return nil, fmt.Errorf("webhook: resolving %s: %w", host, err)
	}
	ok := addrs[:0:0]
	for _, a := range addrs {
		if c.allowed(a) {
			ok = append(ok, a.Unmap())
		}
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("%w: %s resolves to %v", ErrForbiddenAddress, host, addrs)
	}
	return ok, nil
}

// lookup resolves a host name with LookupNetIP or the default resolver.
func (c *Client) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if c.LookupNetIP != nil {
		return c.LookupNetIP(ctx, "ip", host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// dial is the transport's DialContext: it dials the allowed addresses of
// the host one after the other until one connects (a copyConn).
func (c *Client) dial(ctx context.Context, network, hostport string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	addrs, err := c.allowedAddrs(ctx, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Control: c.control}
	var errs []error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			if c.wrap != nil {
				conn = c.wrap(conn)
			}
			return newCopyConn(conn), nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// control judges the socket address about to be connected to.
func (c *Client) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook: dialing %q: %w", address, err)
	}
	if !c.allowed(ap.Addr()) {
		return fmt.Errorf("%w: dialing %s", ErrForbiddenAddress, ap.Addr())
	}
	return nil
}
