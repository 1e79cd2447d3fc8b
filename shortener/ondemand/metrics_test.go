package ondemand

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddytls"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/registry"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// downDomains is a domain store that fails for one host.
type downDomains struct {
	link.DomainStore
	down string
}

func (d downDomains) Domain(ctx context.Context, host string) (link.Domain, error) {
	if host == d.down {
		return link.Domain{}, errors.New("connection refused")
	}
	return d.DomainStore.Domain(ctx, host)
}

// TestPermissionAnswersCounted: caddy_shortener_tls_permission_total
// counts every answer by kind: yes for a link domain, no for another name
// (asked of the store or remembered) and for a name no link domain can
// be, error when the store fails (the answer is then no).
func TestPermissionAnswersCounted(t *testing.T) {
	s, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	owner := new(int)
	registry.SetDomains(owner, s, downDomains{DomainStore: s, down: "down.example"})
	defer registry.Remove(owner)
	ctx := context.Background()
	if err := s.CreateDomain(ctx, link.Domain{Host: "ok.example", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := caddy.NewContext(caddy.Context{Context: ctx})
	defer cancel()
	p := new(Permission)
	if err := p.Provision(cctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		name string
		deny bool
	}{{"ok.example", false}, {"OK.example", false}, {"unknown.example", true}, {"unknown.example", true},
		{"127.0.0.1", true}, {"down.example", true}} {
		if err := p.CertificateAllowed(ctx, q.name); (err != nil) != q.deny || err != nil && !errors.Is(err, caddytls.ErrPermissionDenied) {
			t.Errorf("CertificateAllowed(%q) = %v, want denied %v", q.name, err, q.deny)
		}
	}
	got := map[string]float64{}
	mfs, err := cctx.GetMetricsRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "caddy_shortener_tls_permission_total" {
			for _, m := range mf.GetMetric() {
				got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if want := map[string]float64{answerYes: 2, answerNo: 3, answerError: 1}; len(got) != len(want) ||
		got[answerYes] != want[answerYes] || got[answerNo] != want[answerNo] || got[answerError] != want[answerError] {
		t.Errorf("caddy_shortener_tls_permission_total = %v, want %v", got, want)
	}
}
