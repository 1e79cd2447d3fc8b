package webhook

import (
	"testing"
	"time"
)

// TestEndpointWants: types always, then the code and tag filters of link
// events; events of no link pass the filters; a disabled endpoint wants
// nothing.
func TestEndpointWants(t *testing.T) {
	e := Endpoint{Types: []string{TypeLinkCreated, TypeClick, TypeRatelimitExceeded}}
	for _, tc := range []struct {
		e         Endpoint
		typ, code string
		tags      []string
		want      bool
	}{
		{e, TypeLinkCreated, "abc", nil, true},
		{e, TypeLinkRevoked, "abc", nil, false},
		{e, TypeRatelimitExceeded, "", nil, true},
		{with(e, func(e *Endpoint) { e.Codes = []string{"abc"} }), TypeClick, "abc", nil, true},
		{with(e, func(e *Endpoint) { e.Codes = []string{"abc"} }), TypeClick, "abd", nil, false},
		{with(e, func(e *Endpoint) { e.Tags = []string{"print"} }), TypeClick, "abc", []string{"web", "print"}, true},
		{with(e, func(e *Endpoint) { e.Tags = []string{"print"} }), TypeClick, "abc", []string{"web"}, false},
		{with(e, func(e *Endpoint) { e.Tags = []string{"print"} }), TypeRatelimitExceeded, "", nil, true},
		{with(e, func(e *Endpoint) { e.Tags, e.Codes = []string{"print"}, []string{"abc"} }), TypeClick, "abc", []string{"print"}, true},
		{with(e, func(e *Endpoint) { e.Tags, e.Codes = []string{"print"}, []string{"abc"} }), TypeClick, "abc", nil, false},
		{with(e, func(e *Endpoint) { e.Disabled = true }), TypeLinkCreated, "abc", nil, false},
	} {
		if got := tc.e.Wants(tc.typ, tc.code, tc.tags); got != tc.want {
			t.Errorf("%+v wants %s of %q %v: %v", tc.e, tc.typ, tc.code, tc.tags, got)
		}
	}
}

func with(e Endpoint, f func(*Endpoint)) Endpoint {
	f(&e)
	return e
}

// TestEndpointSigning: the current key always signs, a rotated-out key
// until its grace period ends.
func TestEndpointSigning(t *testing.T) {
	now := time.Now()
	cur, old, older := NewSecret(), NewSecret(), NewSecret()
	e := Endpoint{Keys: []Key{{Secret: cur}, {Secret: old, Until: now.Add(time.Hour)}, {Secret: older, Until: now}}}
	got := e.Signing(now)
	if len(got) != 2 || got[0].Encode() != cur.Encode() || got[1].Encode() != old.Encode() {
		t.Errorf("signing at now: %d keys", len(got))
	}
	if got := e.Signing(now.Add(2 * time.Hour)); len(got) != 1 {
		t.Errorf("signing after the grace period: %d keys", len(got))
	}
}

// TestEndpointID: ids have their form, differ, and ValidEndpointID
// refuses other spellings.
func TestEndpointID(t *testing.T) {
	a, b := NewEndpointID(), NewEndpointID()
	if a == b || !ValidEndpointID(a) || len(a) != 29 {
		t.Fatalf("ids %q %q", a, b)
	}
	for _, bad := range []string{"", "ep_", a[:28], a + "0", "EP_" + a[3:], "ep_" + "ABCDEFGHJKMNPQRSTVWXYZ0123", "msg_" + a[3:],
		"ep_" + a[3:28] + "u"} {
		if ValidEndpointID(bad) {
			t.Errorf("ValidEndpointID(%q)", bad)
		}
	}
}
