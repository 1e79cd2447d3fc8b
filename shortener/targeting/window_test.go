package targeting

import (
	"testing"
	"time"
)

// minutesIn counts the minutes of [from, from+span) in which the time
// condition cond holds.
func minutesIn(t *testing.T, cond string, from time.Time, span time.Duration) int {
	t.Helper()
	s := oneRule(t, `{"time":`+cond+`}`)
	n := 0
	for at := from; at.Before(from.Add(span)); at = at.Add(time.Minute) {
		if s.Decide(&Visitor{Now: at}).Rule == 0 {
			n++
		}
	}
	return n
}

// TestHoursAcrossDST: hours are local hours of the zone, so the hour a
// DST change skips holds no instant and the hour it repeats holds two.
// Paris springs forward at 02:00 on 29 March 2026 and falls back at 03:00
// on 25 October 2026.
func TestHoursAcrossDST(t *testing.T) {
	springDay := time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC) // 00:00 local, 29 March
	fallDay := time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC)  // 00:00 local, 25 October
	for _, tc := range []struct {
		name  string
		hours string
		day   time.Time
		span  time.Duration
		want  int
	}{
		{"spring 2-3 does not exist", `{"from":2,"until":3}`, springDay, 23 * time.Hour, 0},
		{"spring 1-2", `{"from":1,"until":2}`, springDay, 23 * time.Hour, 60},
		{"spring 3-4", `{"from":3,"until":4}`, springDay, 23 * time.Hour, 60},
		{"spring 0-24 is 23 hours", `{"from":0,"until":24}`, springDay, 23 * time.Hour, 23 * 60},
		{"fall 2-3 happens twice", `{"from":2,"until":3}`, fallDay, 25 * time.Hour, 120},
		{"fall 1-2", `{"from":1,"until":2}`, fallDay, 25 * time.Hour, 60},
		{"fall 3-4", `{"from":3,"until":4}`, fallDay, 25 * time.Hour, 60},
		{"fall 0-24 is 25 hours", `{"from":0,"until":24}`, fallDay, 25 * time.Hour, 25 * 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cond := `{"tz":"Europe/Paris","hours":` + tc.hours + `}`
			if got := minutesIn(t, cond, tc.day, tc.span); got != tc.want {
				t.Errorf("%s on %s: %d minutes, want %d", cond, tc.day.Format(time.DateOnly), got, tc.want)
			}
		})
	}
	// The repeated hour's edges, in UTC: 00:00-01:00 (CEST) and 01:00-02:00 (CET).
	s := oneRule(t, `{"time":{"tz":"Europe/Paris","hours":{"from":2,"until":3}}}`)
	for at, want := range map[string]bool{
		"2026-10-24T23:59:59Z": false, "2026-10-25T00:00:00Z": true,
		"2026-10-25T01:59:59Z": true, "2026-10-25T02:00:00Z": false,
	} {
		now, _ := time.Parse(time.RFC3339, at)
		if got := s.Decide(&Visitor{Now: now}).Rule == 0; got != want {
			t.Errorf("hours 2-3 in Paris at %s: %v, want %v", at, got, want)
		}
	}
}

// TestDaysEastOfUTC: days are the zone's, so a Monday in Tokyo starts at
// 15:00 UTC on Sunday, and one in Kiritimati (UTC+14) at 10:00.
func TestDaysEastOfUTC(t *testing.T) {
	for _, tc := range []struct {
		tz, at string
		want   bool
	}{
		{"Asia/Tokyo", "2026-03-01T14:59:59Z", false}, // Sunday 23:59:59 local
		{"Asia/Tokyo", "2026-03-01T15:00:00Z", true},  // Monday 00:00 local
		{"Asia/Tokyo", "2026-03-02T14:59:59Z", true},  // Monday 23:59:59 local
		{"Asia/Tokyo", "2026-03-02T15:00:00Z", false}, // Tuesday
		{"Pacific/Kiritimati", "2026-03-01T09:59:59Z", false},
		{"Pacific/Kiritimati", "2026-03-01T10:00:00Z", true},
		{"UTC", "2026-03-01T23:59:59Z", false},
		{"", "2026-03-02T00:00:00Z", true},
	} {
		s := oneRule(t, `{"time":{"tz":"`+tc.tz+`","days":["mon"]}}`)
		now, _ := time.Parse(time.RFC3339, tc.at)
		if got := s.Decide(&Visitor{Now: now}).Rule == 0; got != tc.want {
			t.Errorf("mon in %q at %s: %v, want %v", tc.tz, tc.at, got, tc.want)
		}
	}
}

// TestWindowCombined: from, until, days and hours all hold at once.
func TestWindowCombined(t *testing.T) {
	s := oneRule(t, `{"time":{"tz":"America/New_York","from":"2026-01-01T00:00:00-05:00",
		"until":"2026-02-01T00:00:00-05:00","days":["sat","sun"],"hours":{"from":9,"until":17}}}`)
	for at, want := range map[string]bool{
		"2026-01-03T14:00:00Z": true,  // Saturday 09:00 local
		"2026-01-03T13:59:59Z": false, // 08:59
		"2026-01-04T21:59:59Z": true,  // Sunday 16:59
		"2026-01-05T15:00:00Z": false, // Monday
		"2025-12-28T15:00:00Z": false, // a Sunday before from
		"2026-02-01T15:00:00Z": false, // a Sunday at/after until
	} {
		now, _ := time.Parse(time.RFC3339, at)
		if got := s.Decide(&Visitor{Now: now}).Rule == 0; got != want {
			t.Errorf("at %s: %v, want %v", at, got, want)
		}
	}
}
