package ratelimit

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Validate checks the configuration. Caddy calls it after Provision, which
// has judged the configuration already: the rules run once per load.
func (h *Handler) Validate() error { return h.validateOnce() }

// validateOnce runs validate the first time it is called on this load and
// returns its verdict every time.
func (h *Handler) validateOnce() error {
	if !h.validated {
		h.validated, h.invalid = true, h.validate()
	}
	return h.invalid
}

// validate judges the configuration, read from JSON or from the Caddyfile
// (whose parser only tokenizes and assigns): every rule is written here
// once. An error names the zone and the field, and the Caddyfile line of
// the value when the handler came from a Caddyfile.
func (h *Handler) validate() error {
	h.validations++
	if len(h.Zones) == 0 {
		return h.pos.Of("").Wrap(errors.New("at least one zone is required"))
	}
	seen := make(map[string]bool, len(h.Zones))
	for i, z := range h.Zones {
		if z == nil {
			return fmt.Errorf("zone %d: empty", i)
		}
		if seen[z.Name] {
			return z.pos.Of("zone").Wrap(fmt.Errorf("duplicate zone '%s'", z.Name))
		}
		seen[z.Name] = true
		if err := z.validate(); err != nil {
			return err
		}
	}
	if err := h.check(); err != nil {
		return h.pos.Of(ruleField(err)).Wrap(err)
	}
	return h.validateJWT()
}

// check checks the handler's own fields.
func (h *Handler) check() error {
	if _, err := parseFailureMode(h.OnError); err != nil {
		return onField("on_error", err)
	}
	if _, err := parseHeaderMode(h.Headers); err != nil {
		return onField("headers", err)
	}
	switch {
	case h.Status != 0 && (h.Status < 400 || h.Status > 599):
		return onField("status", fmt.Errorf("invalid status '%d': must be an HTTP error status (400-599)", h.Status))
	case h.Instances < 0:
		return onField("instances", fmt.Errorf("invalid instances %d: must be >= 1", h.Instances))
	case h.MaxKeys < 0:
		return onField("max_keys", fmt.Errorf("invalid max_keys %d: must be >= 1", h.MaxKeys))
	case h.Timeout < 0:
		return onField("timeout", fmt.Errorf("invalid timeout %s: must be > 0", time.Duration(h.Timeout)))
	}
	if h.Body != "" && h.Body != bodyNone && h.Body != bodyProblem {
		return onField("body", fmt.Errorf("invalid body %q: must be problem or none", h.Body))
	}
	if !(h.Jitter >= 0 && h.Jitter <= 1) { // NaN too
		return onField("jitter", fmt.Errorf("invalid jitter %v: must be a fraction of the wait, 0-1", h.Jitter))
	}
	if h.ClientNetwork != nil {
		return onField("client_network", h.ClientNetwork.check())
	}
	return nil
}

// validate checks the zone's own fields, without loading modules; the
// error has the Caddyfile line of the field it is about, when known.
func (z *Zone) validate() error {
	err := z.check()
	if err != nil {
		err = fmt.Errorf("zone %q: %w", z.Name, err)
	}
	return z.pos.Of(ruleField(err)).Wrap(err)
}

var zoneNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (z *Zone) check() error {
	if !zoneNameRE.MatchString(z.Name) {
		return onField("zone", fmt.Errorf("invalid zone name '%s': use letters, digits, '_' and '-'", z.Name))
	}
	if z.Key == "" {
		return errors.New("key is required")
	}
	if err := z.checkQuota(); err != nil {
		return err
	}
	if err := z.checkConcurrency(); err != nil {
		return err
	}
	if err := z.checkCalendar(); err != nil {
		return err
	}
	if err := z.checkNotify(); err != nil {
		return err
	}
	if err := z.checkUsage(); err != nil {
		return err
	}
	if err := z.checkBounds(); err != nil {
		return err
	}
	if z.CostAfter != nil && z.Algorithm != limiter.Concurrency {
		if err := z.CostAfter.check(cmp.Or(z.Algorithm, DefaultAlgorithm)); err != nil {
			return err
		}
	}
	switch {
	case z.Approximate < 0:
		return onField("approximate", errors.New("approximate must be > 0"))
	case z.Approximate > 0 && !approxAlgorithm(z.Algorithm):
		return onField("approximate", fmt.Errorf("approximate works with token_bucket, sliding_window and fixed_window, not %s", z.Algorithm))
	}
	if err := z.checkBan(); err != nil {
		return err
	}
	for _, s := range z.CountStatus {
		if s < 100 || s > 599 {
			return onField("count_status", fmt.Errorf("invalid count_status '%d': must be an HTTP status (100-599)", s))
		}
	}
	if z.OnError != "" {
		if _, err := parseFailureMode(z.OnError); err != nil {
			return onField("on_error", err)
		}
	}
	return nil
}

// checkQuota checks the signs of events, burst and window, the
// algorithm, and where a quota comes from besides: placeholders and plans.
func (z *Zone) checkQuota() error {
	dynEvents := z.Dynamic != nil && z.Dynamic.Events != ""
	dynWindow := z.Dynamic != nil && z.Dynamic.Window != ""
	switch {
	case z.Events == 0 && !dynEvents:
		return errors.New("events is required")
	case z.Events < 0:
		return onField("events", fmt.Errorf("invalid events '%d': must be a positive integer", z.Events))
	case z.Window == 0 && !dynWindow && z.Algorithm != limiter.Concurrency && z.Calendar == "":
		return errors.New("window is required")
	case z.Window < 0:
		return onField("window", fmt.Errorf("invalid window %s: must be positive", time.Duration(z.Window)))
	case z.Burst < 0:
		return onField("burst", fmt.Errorf("invalid burst '%d': must be a non-negative integer", z.Burst))
	case z.Algorithm != "" && !validAlgorithm(z.Algorithm):
		return onField("algorithm", fmt.Errorf("unknown algorithm '%s': must be token_bucket, sliding_window, fixed_window, sliding_log, leaky_bucket or concurrency", z.Algorithm))
	}
	if c := string(z.Cost); c != "" && !isTemplate(c) {
		if _, err := parseCost(c); err != nil {
			return onField("cost", err)
		}
	}
	if z.Dynamic != nil {
		if err := z.Dynamic.validate(z.Events, z.Burst, z.Window); err != nil {
			return err
		}
	}
	if z.Plans != nil {
		if err := z.Plans.validate(); err != nil {
			return onField("plans", err)
		}
	}
	return nil
}

// checkConcurrency checks what a concurrency zone takes (events and
// lease_ttl) and what it does not; lease_ttl belongs to such zones only.
func (z *Zone) checkConcurrency() error {
	if z.Algorithm != limiter.Concurrency {
		if z.LeaseTTL != 0 {
			return onField("lease_ttl", errors.New("lease_ttl applies to concurrency zones only"))
		}
		if z.BodyTimeout != 0 {
			return onField("body_timeout", errors.New("body_timeout applies to concurrency zones only"))
		}
		return nil
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"window", z.Window != 0 || z.Dynamic != nil && z.Dynamic.Window != ""},
		{"burst", z.Burst != 0 || z.Dynamic != nil && z.Dynamic.Burst != ""},
		{"cost", z.Cost != ""},
		{"cost_after", z.CostAfter != nil},
		{"count_status", len(z.CountStatus) > 0},
		{"approximate", z.Approximate != 0},
	} {
		if f.set {
			return onField(f.name, fmt.Errorf("%s does not apply to concurrency zones (a request holds one slot while in flight; see lease_ttl)", f.name))
		}
	}
	if ttl := time.Duration(z.LeaseTTL); ttl != 0 && (ttl < limiter.MinLeaseTTL || ttl > limiter.MaxLeaseTTL) {
		return onField("lease_ttl", fmt.Errorf("invalid lease_ttl %s: must be at least %s and at most %s", ttl, limiter.MinLeaseTTL, limiter.MaxLeaseTTL))
	}
	if bt := time.Duration(z.BodyTimeout); bt != 0 && (bt < time.Second || bt > 24*time.Hour) {
		return onField("body_timeout", fmt.Errorf("invalid body_timeout %s: must be at least 1s and at most 24h", bt))
	}
	return nil
}

// validAlgorithm reports whether name is one of the algorithms.
func validAlgorithm(name string) bool {
	switch name {
	case limiter.TokenBucket, limiter.SlidingWindow, limiter.FixedWindow, limiter.SlidingLog, limiter.LeakyBucket, limiter.Concurrency:
		return true
	}
	return false
}

// approxAlgorithm reports whether an approximate zone may use algorithm
// name ("" is the default).
func approxAlgorithm(name string) bool {
	switch name {
	case "", limiter.TokenBucket, limiter.SlidingWindow, limiter.FixedWindow:
		return true
	}
	return false
}

// validate checks the placeholders of a zone whose static fields are
// events, burst and window: each placeholder must be a template (a
// static value belongs in the static field, where it is checked at load),
// and a field is either static or dynamic, not both.
func (dq *DynamicQuota) validate(events, burst int64, window caddy.Duration) error {
	for _, f := range []struct {
		name, tmpl string
		static     bool
	}{
		{"events", dq.Events, events != 0},
		{"burst", dq.Burst, burst != 0},
		{"window", dq.Window, window != 0},
	} {
		if f.tmpl == "" {
			continue
		}
		if !isTemplate(f.tmpl) {
			return onField(f.name, fmt.Errorf("dynamic %s %q is not a placeholder template; set %s itself", f.name, f.tmpl, f.name))
		}
		if f.static {
			return onField(f.name, fmt.Errorf("%s is both static and dynamic", f.name))
		}
	}
	return nil
}

// validate checks a zone's plans source.
func (p *Plans) validate() error {
	if p.Postgres == "" {
		return errors.New("plans: a postgres connection string is required")
	}
	if p.Table != "" && !planTableRE.MatchString(p.Table) {
		return fmt.Errorf("plans: invalid table %q: must be an identifier or schema.identifier", p.Table)
	}
	if p.Refresh < 0 {
		return errors.New("plans: refresh must be > 0")
	}
	return nil
}

// fieldError is a broken rule about one field, so that the error can name
// the field's Caddyfile line.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// checkCalendar checks `calendar` and `tz`: a known unit on a
// fixed_window zone, a known time zone, and nothing that would change the
// window per request or decide in process.
func (z *Zone) checkCalendar() error {
	if z.Calendar == "" {
		if z.TZ != "" {
			return onField("window", errors.New("tz is only for a calendar window"))
		}
		return nil
	}
	if _, ok := limiter.ParseCalendarUnit(z.Calendar); !ok {
		return onField("window", fmt.Errorf("unknown calendar '%s': must be hour, day, week or month", z.Calendar))
	}
	switch {
	case z.Algorithm != limiter.FixedWindow:
		return onField("window", fmt.Errorf("a calendar window needs algorithm fixed_window, not %s", cmp.Or(z.Algorithm, DefaultAlgorithm)))
	case z.Window != 0:
		return onField("window", errors.New("calendar replaces window: set one of them"))
	case z.Dynamic != nil && z.Dynamic.Window != "":
		return onField("window", errors.New("a calendar window cannot be a placeholder"))
	case z.Approximate != 0:
		return onField("approximate", errors.New("approximate does not work with a calendar window"))
	}
	if _, err := time.LoadLocation(cmp.Or(z.TZ, "UTC")); err != nil || z.TZ == "Local" {
		return onField("window", fmt.Errorf("unknown time zone '%s': use an IANA name such as Europe/Berlin", z.TZ))
	}
	return nil
}

// onField marks err as being about field.
func onField(field string, err error) error {
	if err == nil {
		return nil
	}
	return &fieldError{field: field, err: err}
}

// ruleField is the field err is about; "" for a rule on what several fields
// make together, or on one the config leaves out.
func ruleField(err error) string {
	var fe *fieldError
	if errors.As(err, &fe) {
		return fe.field
	}
	return ""
}

// Interface guard.
var _ caddy.Validator = (*Handler)(nil)
