package shortener

import (
	"context"
	"log/slog"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// BenchmarkClickDeriveGeoIP measures derive with client addresses, without
// a GeoIP file and with a City file of 4,096 networks (4 countries, 388
// cities), the addresses spread over all of them, and the user agents of
// BenchmarkClickDerive.
func BenchmarkClickDeriveGeoIP(b *testing.B) {
	path := filepath.Join(b.TempDir(), "city.mmdb")
	writeGeoDB(b, path, "GeoLite2-City", manyCityNets(4096))
	uas := []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.81 Mobile Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	}
	addrs := make([]netip.Addr, 4096)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{10, byte(i * 7 % 4096 / 256), byte(i * 7 % 256), 9})
	}
	for _, bc := range []struct {
		name  string
		geo   bool
		salts bool
	}{{"off", false, false}, {"city-4096", true, false}, {"city-4096-visitors", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			r := &clicks.Recorder{Ua: clicks.NewUAParser()}
			if bc.geo {
				g, err := clicks.OpenGeoIP(path, 0, slog.New(slog.DiscardHandler))
				if err != nil {
					b.Fatal(err)
				}
				r.Geo = g
			}
			if bc.salts {
				r.Salts = &clicks.SaltCache{Src: fixedSalter(clicks.NewVisitorSalt())}
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				c := clicks.Click{Code: "abc1234", UA: uas[i%len(uas)], Addr: addrs[i%len(addrs)]}
				r.Derive(&c)
				if bc.salts && c.Visitor == 0 {
					b.Fatalf("derive(%v): no visitor", addrs[i%len(addrs)])
				}
				if bc.geo && c.City == "" {
					b.Fatalf("derive(%v): no city", addrs[i%len(addrs)])
				}
			}
		})
	}
}

// fixedSalter gives one salt for every day: the salt store's cost is not
// what BenchmarkClickDeriveGeoIP measures (the salt is cached per day).
type fixedSalter []byte

func (s fixedSalter) VisitorSalt(context.Context, time.Time) ([]byte, error) { return s, nil }
