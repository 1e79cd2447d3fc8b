package shortener

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// geoNet is one network of a test GeoIP file and its record.
type geoNet struct {
	cidr string
	rec  mmdbtype.Map
}

// cityRecord is a GeoLite2/DB-IP City record; empty parts are left out
// (a Country record when sub and city are "").
func cityRecord(country, sub, city string) mmdbtype.Map {
	m := mmdbtype.Map{}
	if country != "" {
		m["country"] = mmdbtype.Map{"iso_code": mmdbtype.String(country), "names": mmdbtype.Map{"en": mmdbtype.String("Somewhere")}}
	}
	if sub != "" {
		m["subdivisions"] = mmdbtype.Slice{mmdbtype.Map{"iso_code": mmdbtype.String(sub)}}
	}
	if city != "" {
		m["city"] = mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(city), "de": mmdbtype.String(city + "-de")}}
	}
	return m
}

// ipinfoLiteRecord is an IPinfo Lite record: a country code, no city.
func ipinfoLiteRecord(country string) mmdbtype.Map {
	return mmdbtype.Map{
		"country_code": mmdbtype.String(country), "country": mmdbtype.String("Somewhere"),
		"asn": mmdbtype.String("AS64500"), "continent_code": mmdbtype.String("EU"),
	}
}

// writeGeoDB writes a MaxMind DB of type typ holding nets to path, through
// a temporary file renamed over it (as a GeoIP updater does).
func writeGeoDB(t testing.TB, path, typ string, nets []geoNet) {
	t.Helper()
	writeGeoDBBuilt(t, path, typ, nets, 0)
}

// writeGeoDBBuilt is writeGeoDB with the file's build time in its
// metadata (Unix seconds; 0: now).
func writeGeoDBBuilt(t testing.TB, path, typ string, nets []geoNet, built int64) {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: typ, IncludeReservedNetworks: true, RecordSize: 28, BuildEpoch: built})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nets {
		_, network, err := net.ParseCIDR(n.cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Insert(network, n.rec); err != nil {
			t.Fatalf("inserting %s: %v", n.cidr, err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".geoip-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(tmp); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		t.Fatal(err)
	}
}

// testCityNets is a City database's networks: IPv4 and IPv6, a country
// without region or city, and a network with no country at all.
var testCityNets = []geoNet{
	{"198.51.100.0/24", cityRecord("US", "CA", "San Francisco")},
	{"203.0.113.0/25", cityRecord("DE", "BE", "Berlin")},
	{"203.0.113.128/25", cityRecord("FR", "", "")},
	{"2001:db8:1::/48", cityRecord("JP", "13", "Tokyo")},
	{"2001:db8:2::/48", cityRecord("BR", "SP", "São Paulo")},
	{"192.0.2.0/24", mmdbtype.Map{"continent": mmdbtype.Map{"code": mmdbtype.String("EU")}}},
}

// manyCityNets is a City database of n /24 networks in 10.0.0.0/8 (n at
// most 65536), countries and cities cycling through a few.
func manyCityNets(n int) []geoNet {
	countries := [...][3]string{{"US", "NY", "New York"}, {"DE", "HE", "Frankfurt am Main"}, {"IN", "MH", "Mumbai"}, {"BR", "RJ", "Rio de Janeiro"}}
	nets := make([]geoNet, n)
	for i := range nets {
		c := countries[i%len(countries)]
		nets[i] = geoNet{"10." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256) + ".0/24", cityRecord(c[0], c[1], c[2]+" "+strconv.Itoa(i%97))}
	}
	return nets
}
