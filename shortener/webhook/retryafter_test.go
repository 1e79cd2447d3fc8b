package webhook

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"120", 2 * time.Minute},
		{"86400", 24 * time.Hour},
		{"86401", MaxRetryAfter},
		{"99999999999999999999999999", MaxRetryAfter},
		{"-5", 0},
		{"+5", 0},
		{"1.5", 0},
		{" 5", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{now.Add(72 * time.Hour).Format(http.TimeFormat), MaxRetryAfter},
		{now.Add(time.Hour).Format(time.RFC850), time.Hour},
		{now.Add(time.Hour).Format(time.ANSIC), time.Hour},
		{"Sun, 06 Dec 2026 08:00:00 XYZ", 0},
	} {
		if got := ParseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
