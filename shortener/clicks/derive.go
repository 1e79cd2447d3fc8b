package clicks

import (
	"context"
	"net/netip"
	"time"
)

// saltTimeout bounds the writer's wait for the day's salt.
const saltTimeout = 2 * time.Second

// Derive sets a click's dimensions, geography and visitor hash from its
// client address and user agent, then clears both: it runs in the recorder's
// writer as the click leaves the buffer (take), so the redirect path only
// enqueues, and no address or user agent reaches the stream, a sink or a
// log. Without the day's salt (the store unreachable) the visitor stays
// unknown (0): the click is counted, not in uniques.
func (r *Recorder) Derive(c *Click) {
	d := r.Ua.dims(c.UA, c.Class)
	c.Device, c.OS, c.Browser = d.device, d.os, d.browser
	c.Country, c.Region, c.City = UnknownDim, "", ""
	if r.Geo != nil {
		c.Country, c.Region, c.City = r.Geo.db().lookup(c.Addr)
	}
	if r.Salts != nil && c.Addr.IsValid() {
		if salt := r.salt(c.At); salt != nil {
			c.Visitor = r.visitors.hash(salt, c.Addr, c.UA)
		}
	}
	c.Addr, c.UA = netip.Addr{}, ""
}

// salt returns the salt of at's day, nil when the store cannot give it;
// only a day not cached yet waits (at most saltTimeout) for the store.
func (r *Recorder) salt(at time.Time) []byte {
	if salt := r.Salts.cached(at); salt != nil {
		return salt
	}
	ctx, cancel := context.WithTimeout(context.Background(), saltTimeout)
	defer cancel()
	salt, _ := r.Salts.Get(ctx, at)
	return salt
}
