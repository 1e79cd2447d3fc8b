package clicks

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// validGeo reports whether a click's country, region and city are values
// the writer can have derived: a client cannot place text of its own in
// them (they come from the GeoIP file, which is validated, and are checked
// again when a stream entry is decoded).
func validGeo(c Click) bool {
	return ValidCountry(c.Country) && validRegion(c.Region) && ValidCity(c.City)
}

// ValidCountry: "" (not derived), UnknownDim, or two uppercase ASCII
// letters.
func ValidCountry(s string) bool {
	return s == "" || s == UnknownDim || len(s) == 2 && isUpper(s[0]) && isUpper(s[1])
}

// validRegion: "" or an ISO 3166-2 code: a country code, '-', then one to
// three letters or digits, uppercase ("US-CA", "FR-75C", "GB-ENG").
func validRegion(s string) bool {
	if s == "" {
		return true
	}
	cc, sub, ok := strings.Cut(s, "-")
	if !ok || len(cc) != 2 || !ValidCountry(cc) || len(sub) < 1 || len(sub) > 3 {
		return false
	}
	for i := 0; i < len(sub); i++ {
		if !isUpper(sub[i]) && !('0' <= sub[i] && sub[i] <= '9') {
			return false
		}
	}
	return true
}

// ValidCity: "" or at most maxCityLen bytes of valid UTF-8 with no
// control or format characters (so no tab or newline of the stream's
// encoding, no bidirectional override) and no space at either end.
func ValidCity(s string) bool {
	if len(s) > maxCityLen || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

func isUpper(b byte) bool { return 'A' <= b && b <= 'Z' }
