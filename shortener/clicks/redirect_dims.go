package clicks

import (
	"net/netip"
	"sync/atomic"

	"github.com/maypok86/otter/v2"
	"github.com/oschwald/maxminddb-golang/v2"
)

// Dims returns the device, OS and browser of a user agent as clicks name
// them, and its class (ClassifyUserAgent judging bots), from the parser's
// bounded cache. Only the first MaxUserAgent bytes are read, so class is
// that of ua when ua is no longer (a click of a longer one classifies it
// whole: ClassifyRequest). Safe for concurrent use: the redirect path
// calls it beside the writer.
func (p *uaParser) Dims(ua string) (device, os, browser string, class UAClass) {
	if len(ua) > MaxUserAgent {
		ua = ua[:MaxUserAgent]
	}
	// Only user agents that are not bots are cached (dims): a hit needs no
	// classifying.
	d, ok := p.cache.GetIfPresent(ua)
	if !ok {
		d = p.dims(ua, ClassifyUserAgent(ua))
	}
	return d.device, d.os, d.browser, d.class
}

// countryReader is a GeoIP file's reader for the redirect path: its own
// reader of the file's bytes, never closed (the garbage collector frees
// it once no redirect holds it), so replacing the file never disturbs a
// lookup in progress, and concurrent caches of countries by record and
// by address (most redirects come from addresses seen a moment ago).
type countryReader struct {
	r      *maxminddb.Reader
	ipinfo bool
	cache  *otter.Cache[uintptr, string]
	addrs  *otter.Cache[netip.Addr, string]
}

// maxCountryCache bounds the records whose country is kept, and
// maxCountryAddrs the addresses.
const (
	maxCountryCache = 4096
	maxCountryAddrs = 16384
)

// share makes db the file Country reads, and its build time the one
// caddy_shortener_geoip_build_timestamp_seconds reports.
func (g *GeoIP) share(db *GeoDB) {
	if db == nil {
		return
	}
	g.built.Store(int64(db.R.Metadata.BuildEpoch))
	r, err := maxminddb.OpenBytes(db.data) // the bytes passed the check already
	if err != nil {
		return
	}
	g.shared.Store(&countryReader{r: r, ipinfo: db.Ipinfo,
		cache: otter.Must(&otter.Options[uintptr, string]{MaximumSize: maxCountryCache}),
		addrs: otter.Must(&otter.Options[netip.Addr, string]{MaximumSize: maxCountryAddrs}),
	})
}

// Country returns the ISO 3166-1 alpha-2 country of addr in the loaded
// file, "" when g is nil, the address is not in it or its record names
// no valid country. Safe for concurrent use.
func (g *GeoIP) Country(addr netip.Addr) string {
	if g == nil || !addr.IsValid() {
		return ""
	}
	cr := g.shared.Load()
	if cr == nil {
		return ""
	}
	addr = addr.Unmap().WithZone("")
	if c, ok := cr.addrs.GetIfPresent(addr); ok {
		return c
	}
	c := cr.lookup(addr)
	cr.addrs.Set(addr, c)
	return c
}

func (cr *countryReader) lookup(addr netip.Addr) string {
	res := cr.r.Lookup(addr)
	if res.Err() != nil || !res.Found() {
		return ""
	}
	if c, ok := cr.cache.GetIfPresent(res.Offset()); ok {
		return c
	}
	var c string
	var err error
	if cr.ipinfo {
		err = res.DecodePath(&c, "country_code")
	} else {
		err = res.DecodePath(&c, "country", "iso_code")
	}
	if err != nil || len(c) != 2 || !ValidCountry(c) {
		c = ""
	}
	cr.cache.Set(res.Offset(), c)
	return c
}

// sharedReader is the GeoIP field Country reads.
type sharedReader = atomic.Pointer[countryReader]
