package targeting

import "fmt"

// Bounds of a rule set, as doc.go states them.
const (
	MaxJSON          = 64 << 10 // bytes of a rule set's JSON, as given to Parse and as normalised
	MaxRules         = 50
	MaxRuleName      = 64 // characters
	MinVariants      = 2
	MaxVariants      = 10
	MaxVariantName   = 32
	MinWeight        = 1
	MaxWeight        = 99
	MaxURL           = 2048 // bytes of url, a variant's url and app_url
	MaxUAValues      = 16   // device, os and browser values
	MaxBrowserName   = 32
	MaxCountries     = 250
	MaxLanguages     = 32
	MaxLanguageTag   = 64
	MaxIPs           = 64
	MaxQuery         = 8
	MaxQueryName     = 128 // bytes, decoded
	MaxQueryEquals   = 256 // bytes, decoded
	MaxTimeZoneName  = 64
	weightTotal      = 100
	maxQuerySlots    = MaxRules * MaxQuery
	queryBitsetWords = (maxQuerySlots + 63) / 64
)

// Rule is one targeting rule: when every condition of If holds, the
// visitor goes to URL (and AppURL) or to one of Variants.
type Rule struct {
	Name     string     `json:"name,omitempty"`
	If       *Condition `json:"if,omitempty"`
	URL      string     `json:"url,omitempty"`
	AppURL   string     `json:"app_url,omitempty"`
	Variants []Variant  `json:"variants,omitempty"`
}

// Condition is a rule's "if": every non-empty field must hold, and a list
// holds when any of its elements matches.
type Condition struct {
	Device   []string     `json:"device,omitempty"`
	OS       []string     `json:"os,omitempty"`
	Browser  []string     `json:"browser,omitempty"`
	Country  []string     `json:"country,omitempty"`
	Language []string     `json:"language,omitempty"`
	IP       []string     `json:"ip,omitempty"`
	Query    []QueryMatch `json:"query,omitempty"`
	Time     *TimeWindow  `json:"time,omitempty"`
}

// QueryMatch is one query condition: the parameter Name is given with the
// value Equals, or (Present) with any value. Exactly one of Equals and
// Present is set; names and values are compared percent-decoded, '+' read
// as a space.
type QueryMatch struct {
	Name    string  `json:"name"`
	Equals  *string `json:"equals,omitempty"`
	Present bool    `json:"present,omitempty"`
}

// TimeWindow is a time condition: the visit falls in [From, Until), on
// one of Days, in Hours, the last two read in TZ's local time.
type TimeWindow struct {
	TZ    string     `json:"tz,omitempty"`
	From  string     `json:"from,omitempty"`
	Until string     `json:"until,omitempty"`
	Days  []string   `json:"days,omitempty"`
	Hours *HourRange `json:"hours,omitempty"`
}

// HourRange is the local hours [From, Until) of a day.
type HourRange struct {
	From  int `json:"from"`
	Until int `json:"until"`
}

// Variant is one destination of an A/B split, taking Weight percent of
// its list's visitors.
type Variant struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Weight int    `json:"weight"`
}

// Options are what the handler knows when a rule set is saved.
type Options struct {
	// CheckURL is the link URL policy (schemes, private targets,
	// deny_hosts, no self-loop), applied to url, each variant's url and
	// an http(s) app_url. Nil accepts any absolute http or https URL.
	CheckURL func(raw string) error
	// AppSchemes are the custom schemes app_url may use ("myapp", "fb"),
	// compared without case.
	AppSchemes []string
	// GeoIP tells that a GeoIP database is loaded; without one a country
	// condition could never hold, and is refused.
	GeoIP bool
}

// FieldError is a refused rule set: Field is the JSON path of the first
// offending value ("rules[2].if.country[0]", "variants[1].weight"), ""
// for the input as a whole (too large, not a JSON object).
type FieldError struct {
	Field, Msg string
}

// Error is Field + ": " + Msg, or Msg alone when Field is "".
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}
