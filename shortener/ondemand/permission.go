// Package ondemand is the shortener's on-demand TLS permission module,
// tls.permission.shortener: Caddy issues a certificate for a name only
// when it is a link domain in the store of a shortener in the config.
package ondemand

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddytls"
	"github.com/maypok86/otter/v2"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/registry"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

func init() {
	caddy.RegisterModule(Permission{})
}

// Permission answers Caddy's on-demand TLS question "may a certificate be
// issued for this name?" from the link domains of the shortener handlers
// in the config (`tls.permission.shortener`): yes only for a domain one
// of their stores has, as the link domains API made it.
//
//	{
//		on_demand_tls {
//			permission shortener
//		}
//	}
//
// A name that is no link domain is remembered for negative_ttl, so that
// handshakes for unknown names ask the store at most once per name in
// that time; a known name is asked each time (Caddy asks only when it has
// no certificate loaded), so a deleted domain gets no new certificate.
// Lookups are bounded by timeout; a store that fails or is slower says no.
type Permission struct {
	// How long a name that is not a link domain is remembered. Default:
	// `1m`.
	NegativeTTL caddy.Duration `json:"negative_ttl,omitempty"`
	// Bounds the store lookups of one question. Default: `2s`.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	negative *otter.Cache[string, struct{}]
	flight   *singleflight.Group
	logger   *zap.Logger
	answers  answers
}

// Defaults and bounds of the permission.
const (
	DefaultPermissionNegativeTTL = time.Minute
	DefaultPermissionTimeout     = 2 * time.Second
	maxPermissionNegative        = 100000 // names remembered as not link domains
)

// CaddyModule returns the Caddy module information.
func (Permission) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "tls.permission.shortener",
		New: func() caddy.Module { return new(Permission) },
	}
}

// Provision sets the defaults and the negative cache.
func (p *Permission) Provision(ctx caddy.Context) error {
	if p.NegativeTTL < 0 || p.Timeout < 0 || time.Duration(p.Timeout) > time.Minute {
		return fmt.Errorf("tls.permission.shortener: negative_ttl must not be negative, timeout between 0 and 1m")
	}
	if p.NegativeTTL == 0 {
		p.NegativeTTL = caddy.Duration(DefaultPermissionNegativeTTL)
	}
	if p.Timeout == 0 {
		p.Timeout = caddy.Duration(DefaultPermissionTimeout)
	}
	p.logger, p.flight = ctx.Logger(), new(singleflight.Group)
	var err error
	if p.answers, err = newAnswers(ctx.GetMetricsRegistry()); err != nil {
		return err
	}
	p.negative = otter.Must(&otter.Options[string, struct{}]{MaximumSize: maxPermissionNegative,
		ExpiryCalculator: otter.ExpiryWriting[string, struct{}](time.Duration(p.NegativeTTL))})
	return nil
}

// CertificateAllowed implements caddytls.OnDemandPermission. Each answer
// is counted in caddy_shortener_tls_permission_total.
func (p *Permission) CertificateAllowed(ctx context.Context, name string) error {
	err := p.answer(name)
	switch {
	case err == nil:
		p.answers.yes.Inc()
	case errors.Is(err, errNoAnswer):
		p.answers.err.Inc()
	default:
		p.answers.no.Inc()
	}
	return err
}

// errNoAnswer marks a no because the link store did not answer.
var errNoAnswer = errors.New("the link store did not answer")

// answer is CertificateAllowed's answer for name.
func (p *Permission) answer(name string) error {
	host, err := urlpolicy.LinkDomain(name)
	if err != nil {
		return fmt.Errorf("%s: %w: not a link domain name: %v", name, caddytls.ErrPermissionDenied, err)
	}
	if _, ok := p.negative.GetIfPresent(host); ok {
		return fmt.Errorf("%s: %w: not a link domain", name, caddytls.ErrPermissionDenied)
	}
	v, err, _ := p.flight.Do(host, func() (any, error) { return p.lookup(host) })
	if err != nil {
		p.logger.Warn("on-demand TLS: looking up a link domain", zap.String("name", host), zap.Error(err))
		return fmt.Errorf("%s: %w: %w: %v", name, caddytls.ErrPermissionDenied, errNoAnswer, err)
	}
	if !v.(bool) {
		return fmt.Errorf("%s: %w: not a link domain", name, caddytls.ErrPermissionDenied)
	}
	return nil
}

// lookup asks every store of a shortener in the config for host, all
// within the timeout, and remembers a no.
func (p *Permission) lookup(host string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(p.Timeout))
	defer cancel()
	var errs []error
	for _, s := range registry.DomainStores() {
		_, err := s.Domain(ctx, host)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, link.ErrDomainNotFound) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return false, errors.Join(errs...)
	}
	p.negative.Set(host, struct{}{})
	return false, nil
}

// UnmarshalCaddyfile reads `permission shortener [{ negative_ttl <d>;
// timeout <d> }]` of the on_demand_tls global option.
func (p *Permission) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the module's name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "negative_ttl":
			v, err := cfparse.PositiveDurationArg(d)
			if err != nil {
				return err
			}
			p.NegativeTTL = caddy.Duration(v)
		case "timeout":
			v, err := cfparse.PositiveDurationArg(d)
			if err != nil {
				return err
			}
			if v > time.Minute {
				return d.Errf("timeout %v is over 1m", v)
			}
			p.Timeout = caddy.Duration(v)
		default:
			return d.Errf("unknown shortener permission setting %q (want negative_ttl or timeout)", d.Val())
		}
	}
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Permission)(nil)
	_ caddytls.OnDemandPermission = (*Permission)(nil)
	_ caddyfile.Unmarshaler       = (*Permission)(nil)
)
