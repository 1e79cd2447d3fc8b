package shortener

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// geoDBBytes builds a GeoIP file in memory whose every IPv4 and global
// IPv6 address holds rec.
func geoDBBytes(t testing.TB, typ string, rec mmdbtype.Map) *clicks.GeoDB {
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: typ, IncludeReservedNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, cidr := range []string{"0.0.0.0/1", "128.0.0.0/1", "2000::/3"} {
		_, n, _ := net.ParseCIDR(cidr)
		if err := tree.Insert(n, rec); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r, err := maxminddb.OpenBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return &clicks.GeoDB{R: r, Ipinfo: typ == "ipinfo lite.mmdb"}
}

// FuzzGeoIPDerive: any address and any country, subdivision and city
// strings in the file give a click within bounds (ClickSize >= 0), with
// the address and user agent cleared; a country, region or city the click
// carries is the file's, and the file's when it is a valid value
// (the oracle: the validators run on the file's strings).
func FuzzGeoIPDerive(f *testing.F) {
	f.Add([]byte{198, 51, 100, 7}, "US", "CA", "San Francisco", false)
	f.Add(netip.MustParseAddr("2001:db8::1").AsSlice(), "JP", "13", "Tōkyō", false)
	f.Add([]byte{10, 0, 0, 1}, "de", "BE", "Tab\tCity", false)
	f.Add([]byte{1, 2, 3}, "FR", "", "", true)
	f.Add([]byte{8, 8, 8, 8}, "NZ", "AUK", " Auckland", true)
	f.Add(netip.MustParseAddr("::ffff:8.8.8.8").AsSlice(), "unknown", "X-Y", "\u202e", false)
	f.Fuzz(func(t *testing.T, addr []byte, country, sub, city string, ipinfo bool) {
		typ, rec := "GeoLite2-City", cityRecord(country, sub, city)
		if ipinfo {
			typ, rec = "ipinfo lite.mmdb", ipinfoLiteRecord(country)
		}
		a, _ := netip.AddrFromSlice(addr)
		r := &clicks.Recorder{Ua: clicks.NewUAParser(), Geo: &clicks.GeoIP{Cur: geoDBBytes(t, typ, rec)}}
		c := clicks.Click{Code: "abc1234", Addr: a, UA: canaryUA}
		r.Derive(&c)
		if clicks.ClickSize(c) < 0 || c.Addr.IsValid() || c.UA != "" {
			t.Fatalf("derive(%v) with %q/%q/%q = %+v: out of bounds or not cleared", a, country, sub, city, c)
		}
		found := a.Is4() || a.Is4In6() || netip.MustParsePrefix("2000::/3").Contains(a) // the networks written
		wantCountry := clicks.UnknownDim
		if len(country) == 2 && clicks.ValidCountry(country) && a.IsValid() {
			wantCountry = country
		}
		if c.Country != wantCountry && !(c.Country == clicks.UnknownDim && !found) {
			t.Fatalf("derive(%v): country %q, want %q", a, c.Country, wantCountry)
		}
		if c.Country == clicks.UnknownDim && (c.Region != "" || c.City != "") {
			t.Fatalf("derive(%v): region %q and city %q without a country", a, c.Region, c.City)
		}
		if c.Region != "" && c.Region != country+"-"+sub {
			t.Fatalf("derive(%v): region %q, not the file's %q", a, c.Region, country+"-"+sub)
		}
		if c.City != "" && (c.City != city || ipinfo) {
			t.Fatalf("derive(%v): city %q, not the file's %q", a, c.City, city)
		}
		if c.Country != clicks.UnknownDim && !ipinfo && (c.City == "") == clicks.ValidCity(city) && city != "" {
			t.Fatalf("derive(%v): city %q, file's %q (valid %v)", a, c.City, city, clicks.ValidCity(city))
		}
	})
}
