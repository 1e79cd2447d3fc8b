package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// TestRevokeDomainLinks: the live links of one domain are revoked, each
// with its link.revoked event when events are on; a link revoked before
// keeps its revocation, links of the default domain and of a host the
// domain's is a prefix of are untouched; again, nothing is left to revoke.
func TestRevokeDomainLinks(t *testing.T) {
	for _, on := range []bool{true, false} {
		for name, s := range openDomainStores(t, on, 0) {
			if !on {
				name += "/off"
			}
			t.Run(name, func(t *testing.T) { revokeDomainLinks(t, s, on) })
		}
	}
}

func revokeDomainLinks(t *testing.T, s domainStore, on bool) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	codes := []string{link.DomainKey("a.example", "x1"), link.DomainKey("a.example", "x2"), link.DomainKey("a.example", "x3"),
		link.DomainKey("a.example.org", "abc"), link.DomainKey("a.example-b", "x1"), link.DomainKey("", "plain"),
		link.DomainKey("", "a.example")}
	for _, c := range codes {
		if err := s.Create(ctx, link.Link{Code: c, LongURL: "https://example.com/" + c}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Revoke(ctx, "a.example/x3", t0); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour) // stored to the microsecond
	if _, err := s.RevokeDomainLinks(ctx, "", at); err == nil {
		t.Error("revoked the links of host \"\"")
	}
	if n, err := s.RevokeDomainLinks(ctx, "a.example", at); err != nil || n != 2 {
		t.Fatalf("revoked %d, %v; want 2", n, err)
	}
	want := map[string]struct {
		revoked time.Time
		version int64
	}{"a.example/x1": {at, 2}, "a.example/x2": {at, 2}, "a.example/x3": {t0, 2}}
	for _, c := range codes {
		l, err := s.Get(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		w := want[c]
		if !l.RevokedAt.Equal(w.revoked.Truncate(time.Microsecond)) || l.Version != max(w.version, 1) {
			t.Errorf("%s: revoked %v, version %d; want %v, %d", c, l.RevokedAt, l.Version, w.revoked, max(w.version, 1))
		}
	}
	if n, err := s.RevokeDomainLinks(ctx, "a.example", at.Add(time.Hour)); err != nil || n != 0 {
		t.Errorf("revoked again %d, %v; want 0", n, err)
	}
	if !on {
		if evs := readEvents(t, s, 100); len(evs) != 0 {
			t.Errorf("events off, yet %d recorded", len(evs))
		}
		return
	}
	// One more event marks the end: nothing came between.
	if err := s.Create(ctx, link.Link{Code: "z-end", LongURL: "https://example.com/"}); err != nil {
		t.Fatal(err)
	}
	evs := readEventsEventually(t, s, len(codes)+4)
	if len(evs) != len(codes)+4 || evs[len(evs)-1].Code != "z-end" {
		t.Fatalf("%d events, want %d ending with z-end: %+v", len(evs), len(codes)+4, evs)
	}
	revoked := map[string]bool{}
	for _, e := range evs[len(codes)+1 : len(codes)+3] {
		if e.Type != link.EventRevoked || e.Code != e.Link.Code || !e.Link.RevokedAt.Equal(at.Truncate(time.Microsecond)) || e.Link.Version != 2 {
			t.Errorf("event %s %s: %+v", e.Type, e.Code, e.Link)
		}
		revoked[e.Code] = true
	}
	if !revoked["a.example/x1"] || !revoked["a.example/x2"] {
		t.Errorf("link.revoked for %v; want a.example/x1 and a.example/x2", revoked)
	}
	if _, err := s.Get(ctx, "a.example"); errors.Is(err, link.ErrNotFound) {
		t.Error("the default domain's a.example is gone")
	}
}
