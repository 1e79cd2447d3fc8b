package ratelimit

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

func TestCaddyfileCalendarWindow(t *testing.T) {
	for _, c := range []struct {
		window, unit, tz string
		loc              string
	}{
		{"1h calendar", "hour", "", "UTC"},
		{"1d calendar tz Europe/Berlin", "day", "Europe/Berlin", "Europe/Berlin"},
		{"1w calendar tz America/New_York", "week", "America/New_York", "America/New_York"},
		{"1mo calendar", "month", "", "UTC"},
	} {
		h, err := parse(t, "ratelimit { zone q { key k; events 1000; algorithm fixed_window; window "+c.window+" } }")
		if err != nil {
			t.Fatalf("window %s: %v", c.window, err)
		}
		z := h.Zones[0]
		if z.Calendar != c.unit || z.TZ != c.tz || z.Window != 0 {
			t.Errorf("window %s: calendar %q tz %q window %s", c.window, z.Calendar, z.TZ, time.Duration(z.Window))
		}
		cal := z.calendar()
		if cal.Unit.String() != c.unit || cal.Loc.String() != c.loc {
			t.Errorf("window %s: calendar %v in %s", c.window, cal.Unit, cal.Loc)
		}
		u, _ := limiter.ParseCalendarUnit(c.unit)
		if z.window() != u.Nominal() {
			t.Errorf("window %s: nominal window %s", c.window, z.window())
		}
		// The JSON names the unit and the zone, without a window.
		b, _ := json.Marshal(z)
		if !strings.Contains(string(b), `"calendar":"`+c.unit+`"`) || strings.Contains(string(b), `"window"`) {
			t.Errorf("window %s: JSON %s", c.window, b)
		}
	}
}

// Each refusal names the problem and the line of the window (or of the
// directive at fault).
func TestCaddyfileCalendarRefused(t *testing.T) {
	for _, c := range []struct {
		name, body, want string
		line             int
	}{
		{"token_bucket", "events 5\nwindow 1d calendar", "a calendar window needs algorithm fixed_window, not token_bucket", 5},
		{"sliding_window", "algorithm sliding_window\nevents 5\nwindow 1d calendar", "a calendar window needs algorithm fixed_window, not sliding_window", 6},
		{"unknown zone", "algorithm fixed_window\nevents 5\nwindow 1d calendar tz Mars/Olympus", "unknown time zone 'Mars/Olympus'", 6},
		{"Local zone", "algorithm fixed_window\nevents 5\nwindow 1d calendar tz Local", "unknown time zone 'Local'", 6},
		{"unit", "algorithm fixed_window\nevents 5\nwindow 2d calendar", "invalid calendar window '2d': must be 1h, 1d, 1w or 1mo", 6},
		{"month without calendar", "algorithm fixed_window\nevents 5\nwindow 1mo", "window", 6},
		{"tz without zone", "algorithm fixed_window\nevents 5\nwindow 1d calendar tz", "want window <duration> or window 1h|1d|1w|1mo calendar [tz <zone>]", 6},
		{"junk", "algorithm fixed_window\nevents 5\nwindow 1d cal", "want window <duration> or window 1h|1d|1w|1mo calendar [tz <zone>]", 6},
		{"approximate", "algorithm fixed_window\nevents 5\nwindow 1d calendar\napproximate 1s", "approximate does not work with a calendar window", 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := "ratelimit {\nzone q {\nkey k\n" + c.body + "\n}\n}"
			_, err := parse(t, in)
			if err == nil {
				t.Fatalf("accepted:\n%s", in)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want %q", err, c.want)
			}
			if c.line > 0 && !strings.Contains(err.Error(), "Testfile:"+strconv.Itoa(c.line)) {
				t.Errorf("error %q, want line %d", err, c.line)
			}
		})
	}
}

// JSON: calendar and tz are checked at load like the Caddyfile.
func TestJSONCalendarZone(t *testing.T) {
	ok := Zone{Name: "q", Key: "k", Events: 10, Algorithm: limiter.FixedWindow, Calendar: "month", TZ: "Europe/Berlin"}
	if err := ok.validate(); err != nil {
		t.Fatalf("valid calendar zone refused: %v", err)
	}
	for _, c := range []struct {
		z    Zone
		want string
	}{
		{Zone{Name: "q", Key: "k", Events: 10, Algorithm: limiter.FixedWindow, Calendar: "year"}, "unknown calendar 'year'"},
		{Zone{Name: "q", Key: "k", Events: 10, Algorithm: limiter.FixedWindow, Calendar: "day", TZ: "Nowhere/Else"}, "unknown time zone"},
		{Zone{Name: "q", Key: "k", Events: 10, Algorithm: limiter.FixedWindow, Calendar: "day", Window: 1}, "calendar replaces window"},
		{Zone{Name: "q", Key: "k", Events: 10, Algorithm: limiter.SlidingLog, Calendar: "day"}, "needs algorithm fixed_window"},
		{Zone{Name: "q", Key: "k", Events: 10, Window: caddy.Duration(time.Hour), Algorithm: limiter.FixedWindow, TZ: "UTC"}, "tz is only for a calendar window"},
	} {
		if err := c.z.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.z, err, c.want)
		}
	}
}
