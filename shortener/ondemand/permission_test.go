package ondemand

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddytls"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/registry"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// countingDomains counts the lookups of a domain store.
type countingDomains struct {
	link.DomainStore
	n atomic.Int64
}

func (c *countingDomains) Domain(ctx context.Context, host string) (link.Domain, error) {
	c.n.Add(1)
	return c.DomainStore.Domain(ctx, host)
}

// TestPermission: the on-demand TLS permission says yes to a stored link
// domain in any spelling, no to other names, asking the store about an
// unknown name once per negative_ttl however many handshakes ask, and no
// to a domain once it is deleted.
func TestPermission(t *testing.T) {
	s, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds := &countingDomains{DomainStore: s}
	owner := new(int)
	registry.SetDomains(owner, ds, ds)
	defer registry.Remove(owner)
	ctx := context.Background()
	if err := ds.CreateDomain(ctx, link.Domain{Host: "ok.example", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p := &Permission{NegativeTTL: caddy.Duration(time.Hour)}
	cctx, cancel := caddy.NewContext(caddy.Context{Context: ctx})
	defer cancel()
	if err := p.Provision(cctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ok.example", "OK.Example."} {
		if err := p.CertificateAllowed(ctx, name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	before := ds.n.Load()
	for range 100 {
		if err := p.CertificateAllowed(ctx, "unknown.example"); !errors.Is(err, caddytls.ErrPermissionDenied) {
			t.Fatalf("unknown.example: %v", err)
		}
	}
	if n := ds.n.Load() - before; n != 1 {
		t.Errorf("100 handshakes for an unknown name asked the store %d times, want 1", n)
	}
	for _, name := range []string{"127.0.0.1", "localhost", "a_b.example"} {
		if err := p.CertificateAllowed(ctx, name); !errors.Is(err, caddytls.ErrPermissionDenied) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := ds.DeleteDomain(ctx, "ok.example"); err != nil {
		t.Fatal(err)
	}
	if err := p.CertificateAllowed(ctx, "ok.example"); !errors.Is(err, caddytls.ErrPermissionDenied) {
		t.Errorf("a deleted domain: %v", err)
	}
}

// TestCaddyfilePermission: `permission shortener` and its settings; bad
// ones refused with their line.
func TestCaddyfilePermission(t *testing.T) {
	var p Permission
	if err := p.UnmarshalCaddyfile(caddyfile.NewTestDispenser("shortener {\n negative_ttl 30s\n timeout 1s\n}")); err != nil ||
		p.NegativeTTL != caddy.Duration(30*time.Second) || p.Timeout != caddy.Duration(time.Second) {
		t.Errorf("parsed %+v, %v", p, err)
	}
	for input, want := range map[string]string{
		"shortener now":                     "wrong argument count",
		"shortener {\n timeout 2m\n}":       "timeout 2m0s is over 1m, at Testfile:2",
		"shortener {\n negative_ttl -1s\n}": "Testfile:2",
		"shortener {\n bogus 1\n}":          `unknown shortener permission setting "bogus"`,
	} {
		var p Permission
		if err := p.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", input, err, want)
		}
	}
}
