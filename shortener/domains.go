package shortener

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/shortener/domainapi"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/registry"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// domains are the handler's link domains (docs/domains.md): hosts whose
// requests it answers from links of their own, managed through the API
// under <api>/domains, kept in memory and read again every domainsRefresh
// (another instance may have changed them). Embedded in Handler: its
// fields are the handler's.
type domains struct {
	// Parent zones link domains must be in (`sho.rt` allows `sho.rt` and
	// `go.sho.rt`); names as a browser reads them. Default: any.
	DomainZones []string `json:"domain_zones,omitempty"`

	domainAPI  *domainapi.API
	domainSet  *atomic.Pointer[domainSet] // nil without link domains
	domainStop context.CancelFunc
	domainDone chan struct{}
}

// domainsRefresh is how often the link domains are read again.
const domainsRefresh = 5 * time.Second

// domainSet is the link domains as last read: by host, and the hosts each
// scoped API key (its fingerprint) may use.
type domainSet struct {
	byHost map[string]*link.Domain
	byKey  map[string]map[string]bool
}

// provisionDomains registers the handler's store, and mounts the domains
// API when the store keeps link domains and the handler has an API, and
// reads the domains.
func (h *Handler) provisionDomains() error {
	registry.Add(h, unshared(h.store)) // the TLS permission and the events handler find its store there
	s := unshared(h.store)
	ds, ok := s.(link.DomainStore)
	lister, _ := s.(link.CodeLister)
	revoker, _ := s.(link.DomainLinkRevoker)
	if !ok || lister == nil || revoker == nil || h.API == "" {
		return nil
	}
	zones := make([]string, len(h.DomainZones))
	for i, z := range h.DomainZones {
		var err error
		if zones[i], err = urlpolicy.LinkDomain(z); err != nil {
			return fmt.Errorf("shortener: domain_zones %q: %w", z, err)
		}
	}
	h.domainSet = new(atomic.Pointer[domainSet])
	h.domainAPI = &domainapi.API{Store: ds, Links: lister, Revoker: revoker, Zones: zones, Now: h.now,
		CheckURL: func(raw string) (string, error) { return h.policy.Check(raw) }, Changed: h.reloadDomains}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	if err := h.readDomains(ctx); err != nil {
		return fmt.Errorf("shortener: reading link domains: %w", err)
	}
	run, stop := context.WithCancel(context.Background())
	h.domainStop, h.domainDone = stop, make(chan struct{})
	go h.refreshDomains(run)
	return nil
}

// readDomains reads every domain into a new set.
func (h *Handler) readDomains(ctx context.Context) error {
	list, err := h.domainAPI.Store.Domains(ctx)
	if err != nil {
		return err
	}
	set := &domainSet{byHost: make(map[string]*link.Domain, len(list)), byKey: map[string]map[string]bool{}}
	for i := range list {
		d := &list[i]
		set.byHost[d.Host] = d
		for _, k := range d.Keys {
			if set.byKey[k] == nil {
				set.byKey[k] = map[string]bool{}
			}
			set.byKey[k][d.Host] = true
		}
	}
	h.domainSet.Store(set)
	return nil
}

// reloadDomains reads the domains after a change made here.
func (h *Handler) reloadDomains() {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	if err := h.readDomains(ctx); err != nil {
		h.logger.Warn("reading link domains", zap.Error(err))
	}
}

func (h *Handler) refreshDomains(ctx context.Context) {
	defer close(h.domainDone)
	t := time.NewTicker(domainsRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := h.readDomains(ctx); err != nil && ctx.Err() == nil {
				h.logger.Warn("reading link domains", zap.Error(err))
			}
		}
	}
}

// stopDomains unregisters the store and ends the refresh (Cleanup).
func (h *Handler) stopDomains() {
	registry.Remove(h)
	if h.domainStop != nil {
		h.domainStop()
		<-h.domainDone
		h.domainStop = nil
	}
}

// domainOf is the link domain a request's Host names, nil for the
// default domain (the handler's site address, or any host that is no
// link domain). Without link domains it costs one atomic load.
func (h *Handler) domainOf(r *http.Request) *link.Domain {
	if h.domainSet == nil {
		return nil
	}
	set := h.domainSet.Load()
	if set == nil || len(set.byHost) == 0 {
		return nil
	}
	return set.byHost[urlpolicy.RequestDomain(r.Host)]
}

// keyDomains is the set of domains the request's API key is scoped to;
// nil for a key scoped to none (it sees every domain).
func (h *Handler) keyDomains(r *http.Request) map[string]bool {
	if h.domainSet == nil {
		return nil
	}
	set := h.domainSet.Load()
	if set == nil || len(set.byKey) == 0 {
		return nil
	}
	return set.byKey[keyFingerprint(r)]
}

// unmarshalDomainZones reads `domain_zones <zone...>`.
func (r *reading) unmarshalDomainZones(d *caddyfile.Dispenser) (err error) {
	r.DomainZones, err = cfparse.Args(d)
	return err
}

// validateDomains judges domain_zones: link domain names.
func (h *Handler) validateDomains(pos positions) error {
	for _, z := range h.DomainZones {
		if _, err := urlpolicy.LinkDomain(z); err != nil {
			return pos.at("domain_zones", fmt.Errorf("domain_zones %q: %w", z, err))
		}
	}
	return nil
}

// domainCtxKey carries the link domain of an API request about links.
type domainCtxKey struct{}

// domainIn is the link domain host the request's context carries ("" for
// the default domain).
func domainIn(ctx context.Context) string {
	host, _ := ctx.Value(domainCtxKey{}).(string)
	return host
}

// withAPIDomain reads `domain` of an API request about links: absent, the
// default domain; else a stored link domain in any spelling (404 when it
// is none). A key scoped to domains may use only those (403), never the
// default domain. The request comes back carrying the host.
func (h *Handler) withAPIDomain(r *http.Request) (*http.Request, error) {
	raw := r.URL.Query().Get("domain")
	host := ""
	if raw != "" {
		var set *domainSet
		if h.domainSet != nil {
			set = h.domainSet.Load()
		}
		d, err := urlpolicy.LinkDomain(raw)
		if err != nil || set == nil || set.byHost[d] == nil {
			return r, apiErr(http.StatusNotFound, "domain: no link domain %q", raw)
		}
		host = d
	}
	if scoped := h.keyDomains(r); scoped != nil && !scoped[host] {
		if host == "" {
			return r, apiErr(http.StatusForbidden, "domain: this API key is scoped to link domains: name one")
		}
		return r, apiErr(http.StatusForbidden, "domain: this API key is not scoped to %s", host)
	}
	if host == "" {
		return r, nil
	}
	return r.WithContext(context.WithValue(r.Context(), domainCtxKey{}, host)), nil
}

// validKey reports whether key, a link key (link.DomainKey), could name a
// link.
func validKey(key string) bool { return link.ValidKey(key) }

// serveDomains mounts the domains API.
func (h *Handler) serveDomains(w http.ResponseWriter, r *http.Request, rest string) error {
	if h.domainAPI == nil {
		return apiErr(http.StatusNotFound, "link domains need the postgres or embedded store")
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	ac := domainapi.Access{Write: h.requestScope(r) == scopeWrite, Domains: h.keyDomains(r)}
	err := h.domainAPI.Serve(w, r.WithContext(ctx), rest, ac)
	var se interface{ HTTPStatus() int }
	if err != nil && !errors.As(err, &se) {
		return h.storeErr(err)
	}
	return err
}
