package shortener

import "net/netip"

// derive sets a click's dimensions from its client address and user agent,
// then clears both: it runs in the recorder's writer as the click leaves
// the buffer (take), so the redirect path only enqueues, and no address or
// user agent reaches the stream, a sink or a log.
func (r *ClickRecorder) derive(c *Click) {
	d := r.ua.dims(c.UA, c.Class)
	c.Device, c.OS, c.Browser = d.device, d.os, d.browser
	c.Addr, c.UA = netip.Addr{}, ""
}
