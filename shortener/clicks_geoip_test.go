package shortener

import (
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// geoRecorder is a recorder's writer side with the GeoIP file at path
// (no goroutines): derive runs in the test.
func geoRecorder(t *testing.T, path string) *clicks.Recorder {
	t.Helper()
	g, err := clicks.OpenGeoIP(path, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return &clicks.Recorder{Ua: clicks.NewUAParser(), Geo: g}
}

func deriveGeo(r *clicks.Recorder, addr string) [3]string {
	c := clicks.Click{Code: "abc1234", Addr: netip.MustParseAddr(addr), UA: canaryUA}
	r.Derive(&c)
	return [3]string{c.Country, c.Region, c.City}
}

// Each database shape gives each address its country, region and city;
// an address the file does not hold, or holds without a country, is
// unknown. IPv4 and IPv6 both.
func TestGeoIPDeriveShapes(t *testing.T) {
	dir := t.TempDir()
	city, country, ipinfo := filepath.Join(dir, "city.mmdb"), filepath.Join(dir, "country.mmdb"), filepath.Join(dir, "ipinfo.mmdb")
	writeGeoDB(t, city, "GeoLite2-City", testCityNets)
	var countryNets, ipinfoNets []geoNet
	for _, n := range testCityNets {
		m, _ := n.rec["country"].(mmdbtype.Map)
		cc, _ := m["iso_code"].(mmdbtype.String)
		countryNets = append(countryNets, geoNet{n.cidr, cityRecord(string(cc), "", "")})
		ipinfoNets = append(ipinfoNets, geoNet{n.cidr, ipinfoLiteRecord(string(cc))})
	}
	writeGeoDB(t, country, "DBIP-Country-Lite", countryNets)
	writeGeoDB(t, ipinfo, "ipinfo lite.mmdb", ipinfoNets)
	unknown := [3]string{clicks.UnknownDim, "", ""}
	for _, tc := range []struct {
		path, addr string
		want       [3]string
	}{
		{city, "198.51.100.7", [3]string{"US", "US-CA", "San Francisco"}},
		{city, "203.0.113.1", [3]string{"DE", "DE-BE", "Berlin"}},
		{city, "203.0.113.200", [3]string{"FR", "", ""}},
		{city, "2001:db8:1::1", [3]string{"JP", "JP-13", "Tokyo"}},
		{city, "2001:db8:2:ffff::9", [3]string{"BR", "BR-SP", "São Paulo"}},
		{city, "192.0.2.1", unknown},
		{city, "100.64.0.1", unknown},
		{city, "2001:db8:3::1", unknown},
		{city, "::1", unknown},
		{country, "198.51.100.7", [3]string{"US", "", ""}},
		{country, "2001:db8:1::1", [3]string{"JP", "", ""}},
		{country, "100.64.0.1", unknown},
		{ipinfo, "203.0.113.1", [3]string{"DE", "", ""}},
		{ipinfo, "2001:db8:2::1", [3]string{"BR", "", ""}},
		{ipinfo, "192.0.2.1", unknown},
	} {
		if got := deriveGeo(geoRecorder(t, tc.path), tc.addr); got != tc.want {
			t.Errorf("%s: derive(%s) = %q, want %q", filepath.Base(tc.path), tc.addr, got, tc.want)
		}
	}
	// No file, or no address: unknown.
	r := &clicks.Recorder{Ua: clicks.NewUAParser()}
	if got := deriveGeo(r, "198.51.100.7"); got != unknown {
		t.Errorf("without clicks_geoip: derive = %q, want %q", got, unknown)
	}
	c := clicks.Click{Code: "abc1234"}
	geoRecorder(t, city).Derive(&c)
	if c.Country != clicks.UnknownDim {
		t.Errorf("no address: country %q, want %q", c.Country, clicks.UnknownDim)
	}
}

// Values in the file that are not valid click values never reach a click:
// a bad country makes the click unknown, a bad region or city is dropped.
func TestGeoIPHostileValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hostile.mmdb")
	long := strings.Repeat("x", 500)
	nets := []geoNet{
		{"10.0.1.0/24", cityRecord("us", "CA", "Lowercase")},
		{"10.0.2.0/24", cityRecord("USA", "CA", "Three")},
		{"10.0.3.0/24", cityRecord("U\n", "", "")},
		{"10.0.4.0/24", cityRecord("US", "CA", "Tab\tCity")},
		{"10.0.5.0/24", cityRecord("US", "CA", "New\nLine")},
		{"10.0.6.0/24", cityRecord("US", "CA", "Bell\x07")},
		{"10.0.7.0/24", cityRecord("US", "CA", long)},
		{"10.0.8.0/24", cityRecord("US", "CAL1", "Region Too Long")},
		{"10.0.9.0/24", cityRecord("US", "c a", "Bad Region")},
		{"10.0.10.0/24", cityRecord("US", "CA", " Padded ")},
		{"10.0.11.0/24", cityRecord("US", "CA", "Over\u202eride")},
		{"10.0.12.0/24", cityRecord("US", "CA", "\xff\xfe")},
		{"10.0.13.0/24", cityRecord(clicks.UnknownDim, "CA", "Unknown Land")},
		{"10.0.14.0/24", mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.Uint32(840)}}},
		{"10.0.15.0/24", mmdbtype.Map{"country": mmdbtype.String("US")}},
		{"10.0.16.0/24", mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String("US")},
			"city": mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.Slice{mmdbtype.String("x")}}}}},
		{"10.0.17.0/24", mmdbtype.Map{"country_code": mmdbtype.String("DE"), "country": mmdbtype.String("Germany")}},
		{"10.0.18.0/24", cityRecord("US", "-", "")},
	}
	writeGeoDB(t, path, "GeoLite2-City", nets)
	r := geoRecorder(t, path)
	unknown := [3]string{clicks.UnknownDim, "", ""}
	want := map[string][3]string{
		"10.0.1.1": unknown, "10.0.2.1": unknown, "10.0.3.1": unknown,
		"10.0.4.1": {"US", "US-CA", ""}, "10.0.5.1": {"US", "US-CA", ""}, "10.0.6.1": {"US", "US-CA", ""},
		"10.0.7.1": {"US", "US-CA", ""}, "10.0.8.1": {"US", "", "Region Too Long"}, "10.0.9.1": {"US", "", "Bad Region"},
		"10.0.10.1": {"US", "US-CA", ""}, "10.0.11.1": {"US", "US-CA", ""}, "10.0.12.1": {"US", "US-CA", ""},
		"10.0.13.1": unknown, "10.0.14.1": unknown, "10.0.15.1": unknown, "10.0.16.1": unknown, "10.0.17.1": unknown,
		"10.0.18.1": {"US", "", ""},
	}
	for addr, w := range want {
		c := clicks.Click{Code: "abc1234", Addr: netip.MustParseAddr(addr), UA: canaryUA}
		r.Derive(&c)
		if got := [3]string{c.Country, c.Region, c.City}; got != w {
			t.Errorf("derive(%s) = %q, want %q", addr, got, w)
		}
		if clicks.ClickSize(c) < 0 {
			t.Errorf("derive(%s): click out of bounds: %+v", addr, c)
		}
	}
	ipinfo := filepath.Join(t.TempDir(), "ipinfo.mmdb")
	writeGeoDB(t, ipinfo, "ipinfo lite.mmdb", []geoNet{
		{"10.0.1.0/24", ipinfoLiteRecord("de")},
		{"10.0.2.0/24", mmdbtype.Map{"country_code": mmdbtype.Uint32(276)}},
		{"10.0.3.0/24", ipinfoLiteRecord("D\t")},
		{"10.0.4.0/24", ipinfoLiteRecord("DE")},
	})
	r = geoRecorder(t, ipinfo)
	for addr, w := range map[string][3]string{"10.0.1.1": unknown, "10.0.2.1": unknown, "10.0.3.1": unknown, "10.0.4.1": {"DE", "", ""}} {
		if got := deriveGeo(r, addr); got != w {
			t.Errorf("IPinfo derive(%s) = %q, want %q", addr, got, w)
		}
	}
}

// A file that is missing, unreadable, not a MaxMind DB or without
// countries is refused, the error naming the path.
func TestGeoIPOpenErrors(t *testing.T) {
	dir := t.TempDir()
	asn, empty, junk := filepath.Join(dir, "asn.mmdb"), filepath.Join(dir, "empty.mmdb"), filepath.Join(dir, "junk.mmdb")
	writeGeoDB(t, asn, "GeoLite2-ASN", []geoNet{{"198.51.100.0/24", mmdbtype.Map{"autonomous_system_number": mmdbtype.Uint32(64500)}}})
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.mmdb"), "no such file or directory"},
		{dir, "is a directory"},
		{empty, "not a MaxMind DB file"},
		{junk, "not a MaxMind DB file"},
		{asn, `database type "GeoLite2-ASN" has no country`},
	} {
		_, err := clicks.OpenGeoIP(tc.path, 0, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `clicks_geoip "`+tc.path+`"`) {
			t.Errorf("openGeoIP(%s) = %v, want an error naming the path and %q", tc.path, err, tc.want)
		}
	}
}

// The handler with clicks_geoip set to a bad file fails to provision; a
// good one derives countries (see TestGeoIPReloadWhileRedirecting).
func TestGeoIPProvisionFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nope.mmdb")
	h := &Handler{Path: filepath.Join(dir, "links.db"), ClicksGeoIP: path}
	err := provision(t, h)
	_ = h.Cleanup()
	if err == nil || !strings.Contains(err.Error(), "clicks_geoip") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Provision with a missing GeoIP file = %v, want an error naming clicks_geoip and the path", err)
	}
}
