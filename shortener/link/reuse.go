package link

import (
	"bytes"
	"strconv"
	"time"
)

// "reuse": true on a create without a custom code answers an existing link
// instead of creating one: an active (not revoked, not expired), non-custom
// link with the same long URL (canonical, as the validator stores it), the
// same expiry and the same per-link rules. Title, tags and notes are not
// compared: the answer shows the existing link's.

// Reusable reports whether stored may answer a reuse request for want at now.
func Reusable(stored, want Link, now time.Time) bool {
	return !stored.Custom && stored.RevokedAt.IsZero() && !stored.Gone(now) &&
		(stored.MaxClicks == 0 || stored.ClicksServed < stored.MaxClicks) && sameReuse(stored, want)
}

// sameReuse compares what reuse compares: long URL, expiry (to the
// microsecond the stores keep) and per-link rules.
func sameReuse(a, b Link) bool {
	return a.LongURL == b.LongURL &&
		a.ExpiresAt.Truncate(time.Microsecond).Equal(b.ExpiresAt.Truncate(time.Microsecond)) &&
		a.RedirectStatus == b.RedirectStatus && a.MaxClicks == b.MaxClicks &&
		a.ValidFrom.Truncate(time.Microsecond).Equal(b.ValidFrom.Truncate(time.Microsecond)) &&
		forwardKey(a.ForwardQuery) == forwardKey(b.ForwardQuery) &&
		bytes.Equal(a.Targeting, b.Targeting) && a.FallbackURL == b.FallbackURL
}

// ReuseKey is equal for two links exactly when sameReuse holds: the items
// of one batch that may share one link.
func ReuseKey(l Link) string {
	return strconv.FormatInt(ToMicros(l.ExpiresAt), 10) + "|" + strconv.Itoa(l.RedirectStatus) + "|" +
		strconv.FormatInt(ToMicros(l.ValidFrom), 10) + "|" + strconv.FormatInt(l.MaxClicks, 10) + "|" +
		forwardKey(l.ForwardQuery) + "|" + strconv.Itoa(len(l.FallbackURL)) + "|" + l.FallbackURL + "|" +
		strconv.Itoa(len(l.Targeting)) + "|" + string(l.Targeting) + "|" + l.LongURL
}

// forwardKey names a forward_query setting: unset, on or off.
func forwardKey(f *bool) string {
	switch {
	case f == nil:
		return "-"
	case *f:
		return "on"
	}
	return "off"
}
