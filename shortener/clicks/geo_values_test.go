package clicks

import (
	"strings"
	"testing"
	"time"
)

func TestGeoValues(t *testing.T) {
	good := []Click{
		{Country: "US", Region: "US-CA", City: "San Francisco"},
		{Country: UnknownDim},
		{Country: "BR", Region: "BR-SP", City: "São Paulo"},
		{Country: "FR", Region: "FR-75C", City: "Paris"},
		{},
	}
	for _, c := range good {
		if !validGeo(c) {
			t.Errorf("validGeo(%q/%q/%q) = false", c.Country, c.Region, c.City)
		}
	}
	bad := []Click{
		{Country: "us"}, {Country: "USA"}, {Country: "Unknown"},
		{Region: "CA"}, {Region: "US-"}, {Region: "US-CALI"}, {Region: "us-ca"}, {Region: "U1-CA"},
		{City: " Paris"}, {City: "Pa\tris"}, {City: "Pa\nris"}, {City: "a\u202eb"}, {City: "\xff"},
		{City: strings.Repeat("x", maxCityLen+1)},
	}
	for _, c := range bad {
		if validGeo(c) {
			t.Errorf("validGeo(%q/%q/%q) = true", c.Country, c.Region, c.City)
		}
	}
}

// Geography survives the stream; lines of the three earlier formats
// decode with what they have; a line with too many fields or a hostile
// geographic value is refused.
func TestClickEncodingGeo(t *testing.T) {
	at := time.UnixMilli(1764547200000).UTC()
	in := []Click{
		{Code: "abc1234", At: at, Class: ClassBrowser, Device: DeviceMobile, OS: "ios", Browser: "safari", Country: "BR", Region: "BR-SP", City: "São Paulo"},
		{Code: "abc1234", At: at, Class: ClassBrowser, Visitor: 0xfeed, Country: UnknownDim},
		{Code: "abc1234", At: at, Class: ClassBrowser, Country: "US", QR: true},
	}
	out, err := DecodeClicks(EncodeClicks(in))
	if err != nil || len(out) != 3 || out[0] != in[0] || out[1] != in[1] || out[2] != in[2] {
		t.Fatalf("decode(encode(%+v)) = %+v, %v", in, out, err)
	}
	for line, want := range map[string]Click{
		"abc1234\t1\t0\tx.com\n":                                       {Referrer: "x.com"},
		"abc1234\t1\t0\t\tdesktop\tlinux\tfirefox\n":                   {Device: "desktop", OS: "linux", Browser: "firefox"},
		"abc1234\t1\t0\t\tdesktop\tlinux\tfirefox\t00000000000000ff\n": {Device: "desktop", OS: "linux", Browser: "firefox", Visitor: 0xff},
	} {
		got, err := DecodeClicks(line)
		if err != nil || len(got) != 1 {
			t.Fatalf("decodeClicks(%q) = %v, %v", line, got, err)
		}
		want.Code, want.At = "abc1234", time.UnixMilli(1).UTC()
		if got[0] != want {
			t.Errorf("decodeClicks(%q) = %+v, want %+v", line, got[0], want)
		}
	}
	for _, bad := range []string{
		"abc1234\t1\t0\t\t\t\t\t\tUS\t\t\t\t\n",
		"abc1234\t1\t0\t\t\t\t\t\tUS\t\t\tQR\n",
		"abc1234\t1\t0\t\t\t\t\t\tUS\t\t\tlink\n",
		"abc1234\t1\t0\t\t\t\t\t\tus\t\t\n",
		"abc1234\t1\t0\t\t\t\t\t\tUS\tCA\t\n",
		"abc1234\t1\t0\t\t\t\t\t\tUS\t\tA\tB\n",
		"abc1234\t1\t0\t\t\t\t\t\tUS\t\n",
		"abc1234\t1\t0\t\t\n",
	} {
		if _, err := DecodeClicks(bad); err == nil {
			t.Errorf("decodeClicks(%q) accepted a malformed line", bad)
		}
	}
}
