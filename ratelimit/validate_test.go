package ratelimit

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// Caddy provisions, then validates: the rules run once per load.
func TestValidateOncePerLoad(t *testing.T) {
	h := &Handler{Zones: []*Zone{{Name: "api", Key: "{client_ip}", Events: 5, Window: caddy.Duration(time.Second)}}}
	provision(t, h)
	if h.validations != 1 {
		t.Errorf("validate ran %d times in Provision and Validate, want 1", h.validations)
	}
	if err := h.Validate(); err != nil || h.validations != 1 {
		t.Errorf("Validate again = %v after %d runs, want nil after 1", err, h.validations)
	}
}

// A rule broken in JSON names the zone and field, without a position; the
// same in the Caddyfile names the line of the value.
func TestValidatePositions(t *testing.T) {
	bad := &Handler{Zones: []*Zone{{Name: "api", Key: "k", Events: 1, Window: caddy.Duration(time.Second), CountStatus: []int{999}}}}
	err := bad.Validate()
	if err == nil || err.Error() != `zone "api": invalid count_status '999': must be an HTTP status (100-599)` {
		t.Errorf("Validate() = %v", err)
	}
	_, err = parse(t, "ratelimit {\nzone api {\nkey k\nevents 1\nwindow 1s\ncount_status 999\n}\nstatus 200\n}")
	if err == nil || !strings.HasSuffix(err.Error(), "at Testfile:6") {
		t.Errorf("UnmarshalCaddyfile error = %v, want it at the count_status line (Testfile:6)", err)
	}
	_, err = parse(t, "ratelimit {\nzone api {\nkey k\nevents 1\nwindow 1s\n}\nstatus 200\n}")
	if err == nil || !strings.Contains(err.Error(), "invalid status '200'") || !strings.HasSuffix(err.Error(), "at Testfile:7") {
		t.Errorf("UnmarshalCaddyfile error = %v, want the status at Testfile:7", err)
	}
}
