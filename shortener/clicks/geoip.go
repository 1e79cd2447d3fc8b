package clicks

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"
)

// maxGeoIPBytes bounds a GeoIP file read into memory (a City database is
// under 100 MB).
const maxGeoIPBytes = 1 << 30

// geoProbes are the addresses a GeoIP file must look up without error
// before it is used: one per address family.
var geoProbes = [...]netip.Addr{netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("2001:4860:4860::8888")}

// GeoDB is one GeoIP file, read into memory: a file rewritten in place
// cannot change or fault (as a memory map would) what a lookup reads.
type GeoDB struct {
	R      *maxminddb.Reader
	data   []byte      // the file's bytes, which R reads (never changed)
	info   os.FileInfo // the file as it was stated before it was read
	Ipinfo bool        // records of IPinfo's shape (ipinfoRecord)
	cache  map[uintptr]geoValues
}

// GeoRecord is what a lookup in a GeoLite2, GeoIP2 or DB-IP file decodes:
// the country, first subdivision and city. Other fields are skipped.
type GeoRecord struct {
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	Subdivisions []struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"subdivisions"`
	City struct {
		Names struct {
			EN string `maxminddb:"en"`
		} `maxminddb:"names"`
	} `maxminddb:"city"`
}

// ipinfoRecord is what a lookup in an IPinfo file decodes: its country
// Code (its "country" is the English name).
type ipinfoRecord struct {
	CountryCode string `maxminddb:"country_code"`
}

// openGeoDB reads and checks the GeoIP file at path: a MaxMind DB of a
// supported type (supportedGeoType) in which the probe addresses look up
// without error.
func openGeoDB(path string) (*GeoDB, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > maxGeoIPBytes {
		return nil, fmt.Errorf("%d bytes: larger than %d", info.Size(), maxGeoIPBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxGeoIPBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxGeoIPBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxGeoIPBytes)
	}
	return openGeoBytes(data, info)
}

// openGeoBytes opens and checks a GeoIP file's bytes (info: the file
// they were read from). Readers of the same bytes share them: each has
// its own decoded-record cache and is closed on its own.
func openGeoBytes(data []byte, info os.FileInfo) (*GeoDB, error) {
	r, err := maxminddb.OpenBytes(data)
	if err != nil {
		return nil, fmt.Errorf("not a MaxMind DB file: %w", err)
	}
	db := &GeoDB{R: r, data: data, info: info, Ipinfo: strings.HasPrefix(strings.ToLower(r.Metadata.DatabaseType), "ipinfo")}
	if err := db.check(); err != nil {
		db.close()
		return nil, err
	}
	return db, nil
}

// Check judges an opened file: its type, and a lookup of each probe.
func (db *GeoDB) check() error {
	typ := db.R.Metadata.DatabaseType
	if !supportedGeoType(typ) {
		return fmt.Errorf("database type %q has no country (want a Country or City database of GeoLite2, GeoIP2 or DB-IP, or IPinfo Lite)", typ)
	}
	for _, a := range geoProbes {
		if a.Is6() && db.R.Metadata.IPVersion == 4 {
			continue
		}
		if _, err := db.decode(db.R.Lookup(a)); err != nil {
			return fmt.Errorf("looking up %s: %w", a, err)
		}
	}
	return nil
}

// supportedGeoType reports whether a database type names a database with
// countries: GeoLite2-Country, GeoLite2-City, GeoIP2-Country, GeoIP2-City,
// GeoIP2-Enterprise, DBIP-Country-Lite, DBIP-City-Lite, DB-IP's paid
// Country and City, and IPinfo's Lite and country databases. ASN, ISP,
// domain and anonymous-IP databases are not.
func supportedGeoType(typ string) bool {
	t := strings.ToLower(typ)
	return strings.Contains(t, "country") || strings.Contains(t, "city") || strings.Contains(t, "enterprise") ||
		strings.HasPrefix(t, "ipinfo") && strings.Contains(t, "lite")
}

// maxGeoCache bounds the records a file's lookups keep decoded (by
// their offset in the file; a City file has a few hundred thousand).
const maxGeoCache = 8192

// geoValues are a record's click values.
type geoValues struct{ country, region, city string }

// lookup returns the country, region and city of addr: UnknownDim, "", ""
// when the address is not in the file, its record does not decode, or its
// country is not an ISO 3166-1 alpha-2 code. A region or city that is not
// a valid click value (validRegion, ValidCity) is dropped (""), never
// passed on. Records are decoded once and kept by offset (many networks
// share one); writer only.
func (db *GeoDB) lookup(addr netip.Addr) (country, region, city string) {
	if !addr.IsValid() {
		return UnknownDim, "", ""
	}
	res := db.R.Lookup(addr)
	if res.Err() != nil || !res.Found() {
		return UnknownDim, "", ""
	}
	v, ok := db.cache[res.Offset()]
	if !ok {
		rec, err := db.decode(res)
		v = recordValues(rec, err)
		if db.cache == nil || len(db.cache) >= maxGeoCache {
			db.cache = make(map[uintptr]geoValues, 256)
		}
		db.cache[res.Offset()] = v
	}
	return v.country, v.region, v.city
}

// recordValues judges a decoded record's values.
func recordValues(rec GeoRecord, err error) geoValues {
	country := rec.Country.ISOCode
	if err != nil || len(country) != 2 || !ValidCountry(country) {
		return geoValues{UnknownDim, "", ""}
	}
	v := geoValues{country: country}
	if len(rec.Subdivisions) > 0 {
		if sub := rec.Subdivisions[0].ISOCode; len(sub) <= 3 {
			if region := country + "-" + sub; validRegion(region) {
				v.region = region
			}
		}
	}
	if ValidCity(rec.City.Names.EN) {
		v.city = rec.City.Names.EN
	}
	return v
}

// decode decodes a lookup's record, giving an IPinfo record the shape of
// a MaxMind one (its country code only). Not found: a zero record.
func (db *GeoDB) decode(res maxminddb.Result) (GeoRecord, error) {
	var rec GeoRecord
	if db.Ipinfo {
		var ip ipinfoRecord
		err := res.Decode(&ip)
		rec.Country.ISOCode = ip.CountryCode
		return rec, err
	}
	err := res.Decode(&rec)
	return rec, err
}

// describe is the file's type and build time, for the log.
func (db *GeoDB) describe() (typ string, built time.Time) {
	return db.R.Metadata.DatabaseType, db.R.Metadata.BuildTime().UTC()
}

func (db *GeoDB) close() {
	if db != nil {
		_ = db.R.Close()
	}
}

// sameGeoFile reports whether a and b are the same file with the same size
// and modification time: a file replaced by rename (another inode) or
// rewritten in place (mtime, size) is not.
func sameGeoFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
