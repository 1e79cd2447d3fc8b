// Command geoipdb writes a small GeoIP City database (MaxMind DB format) for
// make bench: loopback and a few documentation networks with a country,
// region and city, so each benchmarked click pays a real lookup. No
// database is downloaded.
package main

import (
	"flag"
	"log"
	"net"
	"os"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

func main() {
	out := flag.String("o", "bench-city.mmdb", "file to write")
	flag.Parse()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-City", IncludeReservedNetworks: true, RecordSize: 28})
	if err != nil {
		log.Fatal(err)
	}
	for cidr, place := range map[string][3]string{
		"127.0.0.0/8":     {"DE", "BE", "Berlin"},
		"::1/128":         {"DE", "BE", "Berlin"},
		"198.51.100.0/24": {"US", "CA", "San Francisco"},
		"203.0.113.0/24":  {"FR", "IDF", "Paris"},
	} {
		_, network, err := net.ParseCIDR(cidr)
		if err != nil {
			log.Fatal(err)
		}
		rec := mmdbtype.Map{
			"country":      mmdbtype.Map{"iso_code": mmdbtype.String(place[0])},
			"subdivisions": mmdbtype.Slice{mmdbtype.Map{"iso_code": mmdbtype.String(place[1])}},
			"city":         mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(place[2])}},
		}
		if err := tree.Insert(network, rec); err != nil {
			log.Fatal(err)
		}
	}
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
