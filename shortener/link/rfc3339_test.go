package link

import (
	"strings"
	"testing"
	"time"
)

// ParseTime takes what the document's date-time takes, and refuses what
// time.Parse alone would let through.
func TestParseTime(t *testing.T) {
	for _, ok := range []string{"2026-12-06T10:30:00Z", "2026-12-06t10:30:00.123456789+01:00", "0000-01-01T00:00:00-00:00"} {
		if _, err := ParseTime(ok); err != nil {
			t.Errorf("ParseTime(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"0000-10-01T0:00:00Z", "2026-12-06 10:30:00Z", "2026-12-06T10:30:00", "2026-12-06T10:30:00.Z",
		"2026-12-06T10:30:00+0100", "2026-12-06T10:30:00+01:00x", "", "tomorrow", "2026-13-01T00:00:00Z"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
	if _, err := time.Parse(time.RFC3339, "0000-10-01T0:00:00Z"); err != nil {
		t.Log("time.Parse now refuses a one-digit hour too:", err)
	}
}

func FuzzParseTime(f *testing.F) {
	f.Add("2026-12-06T10:30:00.5+01:00")
	f.Add("0000-10-01T0:00:00Z")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s)
		if err != nil {
			return
		}
		if !rfc3339Shape(s) {
			t.Fatalf("ParseTime(%q) accepted a string of another shape", s)
		}
		if want, err2 := time.Parse(time.RFC3339, strings.ToUpper(s)); err2 != nil || !want.Equal(got) {
			t.Fatalf("ParseTime(%q) = %v, time.Parse = %v %v", s, got, want, err2)
		}
	})
}
