package shortener

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

func TestCaddyfileClicks(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  Handler
	}{
		{"shortener {\nclicks on\n}", Handler{}},
		{"shortener {\nclicks off\n}", Handler{ClicksOff: true}},
		{"shortener {\nclicks_buffer 1024\n}", Handler{ClicksBuffer: 1024}},
		{"shortener {\nclicks_batch 100 250ms\n}", Handler{ClicksBatch: 100, ClicksInterval: caddy.Duration(250 * time.Millisecond)}},
		{"shortener {\nclicks_stream_maxlen 5000\n}", Handler{ClicksStreamMaxLen: 5000}},
		{"shortener {\nclicks_geoip /var/lib/GeoLite2-City.mmdb\n}", Handler{ClicksGeoIP: "/var/lib/GeoLite2-City.mmdb"}},
		{"shortener {\nclicks on\nclicks_buffer 10\nclicks_batch 5 2s\nclicks_stream_maxlen 99\n}", Handler{
			ClicksBuffer: 10, ClicksBatch: 5, ClicksInterval: caddy.Duration(2 * time.Second), ClicksStreamMaxLen: 99,
		}},
	} {
		h, err := parse(tc.input)
		if err != nil {
			t.Errorf("parse(%q): %v", tc.input, err)
			continue
		}
		if h.ClicksOff != tc.want.ClicksOff || h.ClicksBuffer != tc.want.ClicksBuffer || h.ClicksBatch != tc.want.ClicksBatch ||
			h.ClicksInterval != tc.want.ClicksInterval || h.ClicksStreamMaxLen != tc.want.ClicksStreamMaxLen || h.ClicksGeoIP != tc.want.ClicksGeoIP {
			t.Errorf("parse(%q) = %+v, want %+v", tc.input, *h, tc.want)
		}
	}
}

func TestCaddyfileClicksErrors(t *testing.T) {
	for _, tc := range []struct{ input, want string }{
		{"shortener {\nclicks\n}", "wrong argument count"},
		{"shortener {\nclicks on off\n}", "wrong argument count"},
		{"shortener {\nclicks maybe\n}", "invalid clicks 'maybe': want on or off"},
		{"shortener {\nclicks on\nclicks off\n}", "duplicate subdirective 'clicks'"},
		{"shortener {\nclicks_buffer\n}", "wrong argument count"},
		{"shortener {\nclicks_buffer 1 2\n}", "wrong argument count"},
		{"shortener {\nclicks_buffer lots\n}", "invalid clicks_buffer 'lots': must be a positive integer"},
		{"shortener {\nclicks_buffer 0\n}", "invalid clicks_buffer '0'"},
		{"shortener {\nclicks_buffer -5\n}", "invalid clicks_buffer '-5'"},
		{"shortener {\nclicks_buffer 8\nclicks_buffer 9\n}", "duplicate subdirective 'clicks_buffer'"},
		{"shortener {\nclicks_batch\n}", "wrong argument count"},
		{"shortener {\nclicks_batch 100\n}", "wrong argument count"},
		{"shortener {\nclicks_batch 100 1s 2s\n}", "wrong argument count"},
		{"shortener {\nclicks_batch x 1s\n}", "invalid clicks_batch size 'x': must be a positive integer"},
		{"shortener {\nclicks_batch 0 1s\n}", "invalid clicks_batch size '0'"},
		{"shortener {\nclicks_batch 10 soon\n}", "invalid clicks_batch interval 'soon': must be a positive duration"},
		{"shortener {\nclicks_batch 10 0s\n}", "invalid clicks_batch interval '0s'"},
		{"shortener {\nclicks_batch 10 -1s\n}", "invalid clicks_batch interval '-1s'"},
		{"shortener {\nclicks_stream_maxlen\n}", "wrong argument count"},
		{"shortener {\nclicks_stream_maxlen none\n}", "invalid clicks_stream_maxlen 'none': must be a positive integer"},
		{"shortener {\nclicks_stream_maxlen 0\n}", "invalid clicks_stream_maxlen '0'"},
		{"shortener {\nclicks_geoip\n}", "wrong argument count"},
		{"shortener {\nclicks_geoip a.mmdb b.mmdb\n}", "wrong argument count"},
		{"shortener {\nclicks_geoip \"\"\n}", "invalid clicks_geoip '': want the path of a GeoIP file"},
		{"shortener {\nclicks_geoip a.mmdb\nclicks_geoip b.mmdb\n}", "duplicate subdirective 'clicks_geoip'"},
		{"shortener {\nclicks off\nclicks_geoip a.mmdb\n}", "clicks_geoip needs clicks on"},
	} {
		_, err := parse(tc.input)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.input, err, tc.want)
		}
	}
}

func TestClicksDefaultsAndValidate(t *testing.T) {
	h := new(Handler)
	h.setDefaults()
	if h.ClicksOff || h.ClicksBuffer != 65536 || h.ClicksBatch != 500 || time.Duration(h.ClicksInterval) != time.Second ||
		h.ClicksStreamMaxLen != 1000000 {
		t.Errorf("click defaults: off=%v buffer=%d batch=%d interval=%v maxlen=%d", h.ClicksOff, h.ClicksBuffer,
			h.ClicksBatch, time.Duration(h.ClicksInterval), h.ClicksStreamMaxLen)
	}
	for _, bad := range []Handler{
		{ClicksBuffer: -1}, {ClicksBatch: -1}, {ClicksInterval: -1}, {ClicksStreamMaxLen: -1},
	} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("Validate(%+v) = %v, want a negative-setting error", bad, err)
		}
	}
}

func TestCaddyfileClickBounds(t *testing.T) {
	h, err := parse("shortener {\nclicks_referrers 20\nclicks_retention 90d\nclicks_buffer_bytes 16MiB\nclicks_stream_bytes 1GB\n}")
	if err != nil {
		t.Fatal(err)
	}
	if h.ClicksReferrers != 20 || time.Duration(h.ClicksRetention) != 90*24*time.Hour ||
		h.ClicksBufferBytes != 16<<20 || h.ClicksStreamBytes != 1e9 {
		t.Errorf("parsed referrers=%d retention=%v buffer_bytes=%d stream_bytes=%d", h.ClicksReferrers,
			time.Duration(h.ClicksRetention), h.ClicksBufferBytes, h.ClicksStreamBytes)
	}
	for _, tc := range []struct{ input, want string }{
		{"shortener {\nclicks_referrers\n}", "wrong argument count"},
		{"shortener {\nclicks_referrers 0\n}", "invalid clicks_referrers '0': must be a positive integer"},
		{"shortener {\nclicks_referrers 10001\n}", "invalid clicks_referrers 10001: want 1 to 10000"},
		{"shortener {\nclicks_referrers 5\nclicks_referrers 6\n}", "duplicate subdirective 'clicks_referrers'"},
		{"shortener {\nclicks_retention forever\n}", "invalid clicks_retention 'forever': must be a positive duration"},
		{"shortener {\nclicks_retention 12h\n}", "invalid clicks_retention 12h0m0s: want 1d to 36500d"},
		{"shortener {\nclicks_retention 36501d\n}", "want 1d to 36500d"},
		{"shortener {\nclicks_buffer_bytes lots\n}", "invalid clicks_buffer_bytes 'lots': must be a positive size like 8MiB"},
		{"shortener {\nclicks_buffer_bytes 1KiB\n}", "invalid clicks_buffer_bytes 1024: want 65536 to 1073741824 bytes"},
		{"shortener {\nclicks_buffer_bytes 2GiB\n}", "want 65536 to 1073741824 bytes"},
		{"shortener {\nclicks_stream_bytes 100KiB\n}", "invalid clicks_stream_bytes 102400: want 262144 to 68719476736 bytes"},
		{"shortener {\nclicks_stream_bytes 0\n}", "invalid clicks_stream_bytes '0'"},
		{"shortener {\nclicks_stream_bytes 1MiB 2MiB\n}", "wrong argument count"},
		{"shortener {\nclicks_hourly_retention\n}", "wrong argument count"},
		{"shortener {\nclicks_hourly_retention 2h\n}", "invalid clicks_hourly_retention 2h0m0s: want 1d to 36500d"},
		{"shortener {\nclicks_hourly_retention 100d\nclicks_retention 30d\n}", "invalid clicks_hourly_retention 2400h0m0s: longer than clicks_retention 720h0m0s"},
	} {
		_, err := parse(tc.input)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.input, err, tc.want)
		}
	}
	if h, err := parse("shortener {\nclicks_hourly_retention 7d\n}"); err != nil || time.Duration(h.ClicksHourlyRetention) != 7*24*time.Hour {
		t.Errorf("clicks_hourly_retention 7d: %v, %v", h, err)
	}
	d := new(Handler)
	d.setDefaults()
	if time.Duration(d.ClicksHourlyRetention) != 90*24*time.Hour {
		t.Errorf("default clicks_hourly_retention = %v, want 90d", time.Duration(d.ClicksHourlyRetention))
	}
	short := &Handler{ClicksRetention: caddy.Duration(30 * 24 * time.Hour)}
	short.setDefaults()
	if short.ClicksHourlyRetention != short.ClicksRetention {
		t.Errorf("clicks_hourly_retention with clicks_retention 30d = %v, want 30d", time.Duration(short.ClicksHourlyRetention))
	}
	if d.ClicksReferrers != 100 || time.Duration(d.ClicksRetention) != 400*24*time.Hour || d.ClicksBufferBytes != 8<<20 || d.ClicksStreamBytes != 128<<20 {
		t.Errorf("defaults: referrers=%d retention=%v buffer_bytes=%d stream_bytes=%d", d.ClicksReferrers,
			time.Duration(d.ClicksRetention), d.ClicksBufferBytes, d.ClicksStreamBytes)
	}
	for _, bad := range []Handler{
		{ClicksReferrers: -1}, {ClicksReferrers: 10001}, {ClicksRetention: caddy.Duration(time.Hour)}, {ClicksRetention: -1},
		{ClicksBufferBytes: 1}, {ClicksBufferBytes: -1}, {ClicksStreamBytes: 1 << 40}, {ClicksStreamBytes: -5},
	} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "clicks_") {
			t.Errorf("Validate(%+v) = %v, want an error naming the field", bad, err)
		}
	}
}
