package domainapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// API serves <api>/domains. Set the fields before the first request.
type API struct {
	Store link.DomainStore
	// Links tells whether a domain has links (a delete without force is
	// refused then); Revoker revokes them for a delete with force.
	Links   link.CodeLister
	Revoker link.DomainLinkRevoker
	// CheckURL applies the handler's URL policy to a redirect and returns
	// it in canonical form.
	CheckURL func(raw string) (string, error)
	// Zones, when set, are the parent zones a domain must be in (each as
	// urlpolicy.LinkDomain gives it).
	Zones []string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Changed, when set, is called after every change of a domain (the
	// handler reloads its set).
	Changed func()
}

// Access is what a request's credentials allow.
type Access struct {
	Write bool // the key may change things
	// Domains, when not nil, are the only domains the key may see (a key
	// scoped to domains; it may not create, edit or delete domains).
	Domains map[string]bool
}

func (ac Access) sees(host string) bool { return ac.Domains == nil || ac.Domains[host] }

// Error is an API error: a status and a message naming the field.
type Error struct {
	Status int
	Msg    string
}

func (e *Error) Error() string   { return e.Msg }
func (e *Error) HTTPStatus() int { return e.Status }

func errorf(status int, format string, args ...any) error {
	return &Error{status, fmt.Sprintf(format, args...)}
}

// MaxBody bounds a request body: two app site association files and the
// rest.
const MaxBody = 2*MaxAppLinksFile + 8<<10

// Serve answers one request for rest, the path after <api> ("/domains"
// or "/domains/<host>"). An error is an *Error (the API's JSON error) or a
// store failure (a 500).
func (a *API) Serve(w http.ResponseWriter, r *http.Request, rest string, ac Access) error {
	parts := strings.Split(strings.TrimPrefix(rest, "/domains"), "/")[1:]
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if !ac.Write {
			return errorf(http.StatusForbidden, "this API key may only read")
		}
		if ac.Domains != nil {
			return errorf(http.StatusForbidden, "a key scoped to domains may not manage domains")
		}
	}
	switch len(parts) {
	case 0:
		return a.collection(w, r, ac)
	case 1:
		host, err := urlpolicy.LinkDomain(parts[0])
		if err != nil {
			return errorf(http.StatusNotFound, "no link domain %q", parts[0])
		}
		if !ac.sees(host) {
			return errorf(http.StatusForbidden, "this API key is not scoped to %s", host)
		}
		return a.domain(w, r, host)
	}
	return errorf(http.StatusNotFound, "no such API endpoint")
}

func (a *API) collection(w http.ResponseWriter, r *http.Request, ac Access) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		ds, err := a.Store.Domains(r.Context())
		if err != nil {
			return err
		}
		out := []DomainResponse{}
		for _, d := range ds {
			if ac.sees(d.Host) {
				out = append(out, ResponseOf(d))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"domains": out})
		return nil
	case http.MethodPost:
		return a.create(w, r)
	}
	w.Header().Set("Allow", "GET, HEAD, POST")
	return errorf(http.StatusMethodNotAllowed, "method %s not allowed on domains", r.Method)
}

func (a *API) domain(w http.ResponseWriter, r *http.Request, host string) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		d, err := a.Store.Domain(r.Context(), host)
		if err != nil {
			return notFound(err, host)
		}
		writeJSON(w, http.StatusOK, ResponseOf(d))
		return nil
	case http.MethodPatch:
		return a.patch(w, r, host)
	case http.MethodDelete:
		return a.delete(w, r, host)
	}
	w.Header().Set("Allow", "GET, HEAD, PATCH, DELETE")
	return errorf(http.StatusMethodNotAllowed, "method %s not allowed on a domain", r.Method)
}

func (a *API) create(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var req DomainRequest
	if err := decode(body, &req); err != nil {
		return err
	}
	host, err := a.judgeHost(req.Host)
	if err != nil {
		return err
	}
	now := a.now()
	d := link.Domain{Host: host, RootRedirect: req.RootRedirect, NotFoundRedirect: req.NotFoundRedirect,
		AppleAppSiteAssociation: req.AppleAppSiteAssociation, Assetlinks: req.Assetlinks, Keys: req.Keys,
		CreatedAt: now, UpdatedAt: now, Version: 1}
	if err := a.judge(&d); err != nil {
		return err
	}
	switch err := a.Store.CreateDomain(r.Context(), d); {
	case errors.Is(err, link.ErrDomainTaken):
		return errorf(http.StatusConflict, "host: the link domain %s exists", host)
	case errors.Is(err, link.ErrTooManyDomains):
		return errorf(http.StatusConflict, "host: at most %d link domains", link.MaxDomains)
	case err != nil:
		return err
	}
	a.changed()
	w.Header().Set("Location", strings.TrimSuffix(r.URL.Path, "/")+"/"+host)
	writeJSON(w, http.StatusCreated, ResponseOf(d))
	return nil
}

func (a *API) patch(w http.ResponseWriter, r *http.Request, host string) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return bad("body: a JSON merge patch object is needed")
	}
	d, err := a.Store.UpdateDomain(r.Context(), host, a.now(), func(d *link.Domain) error {
		if err := applyPatch(d, fields); err != nil {
			return err
		}
		return a.judge(d)
	})
	if err != nil {
		return notFound(err, host)
	}
	a.changed()
	writeJSON(w, http.StatusOK, ResponseOf(d))
	return nil
}

// applyPatch applies a merge patch's fields to d; null clears a field.
func applyPatch(d *link.Domain, fields map[string]json.RawMessage) error {
	for name, v := range fields {
		null := string(v) == "null"
		var err error
		switch name {
		case "host":
			var h string
			if err = json.Unmarshal(v, &h); err == nil && h != d.Host {
				return bad("host: a domain's host cannot change (create another)")
			}
		case "root_redirect":
			d.RootRedirect, err = stringField(v, null)
		case "not_found_redirect":
			d.NotFoundRedirect, err = stringField(v, null)
		case "apple_app_site_association":
			d.AppleAppSiteAssociation = v
		case "assetlinks":
			d.Assetlinks = v
		case "keys":
			d.Keys = nil
			if !null {
				err = json.Unmarshal(v, &d.Keys)
			}
		default:
			return bad("%s: not a field of a domain", name)
		}
		if err != nil {
			return bad("%s: %v", name, err)
		}
	}
	return nil
}

func stringField(v json.RawMessage, null bool) (string, error) {
	var s string
	if null {
		return "", nil
	}
	return s, json.Unmarshal(v, &s)
}

// delete removes a domain: refused while it has links, unless force=true,
// which revokes them first.
func (a *API) delete(w http.ResponseWriter, r *http.Request, host string) error {
	force := r.URL.Query().Get("force")
	if force != "" && force != "true" && force != "false" {
		return bad("force: true or false, not %q", force)
	}
	if _, err := a.Store.Domain(r.Context(), host); err != nil {
		return notFound(err, host)
	}
	has, err := a.hasLinks(r.Context(), host)
	if err != nil {
		return err
	}
	if has && force != "true" {
		return errorf(http.StatusConflict, "the link domain %s has links: delete with ?force=true to revoke them", host)
	}
	if has {
		if _, err := a.Revoker.RevokeDomainLinks(r.Context(), host, a.now()); err != nil {
			return err
		}
	}
	if err := a.Store.DeleteDomain(r.Context(), host); err != nil {
		return notFound(err, host)
	}
	a.changed()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// hasLinks: a stored key starts with host and the separator.
func (a *API) hasLinks(ctx context.Context, host string) (bool, error) {
	prefix := link.DomainKey(host, "")
	codes, err := a.Links.ScanCodes(ctx, prefix, 1)
	if err != nil {
		return false, err
	}
	return len(codes) > 0 && strings.HasPrefix(codes[0], prefix), nil
}

// notFound maps a store's ErrDomainNotFound to a 404.
func notFound(err error, host string) error {
	if errors.Is(err, link.ErrDomainNotFound) {
		return errorf(http.StatusNotFound, "no link domain %q", host)
	}
	return err
}

func (a *API) now() time.Time {
	if a.Now != nil {
		return a.Now().UTC()
	}
	return time.Now().UTC()
}

func (a *API) changed() {
	if a.Changed != nil {
		a.Changed()
	}
}

// readBody reads at most MaxBody bytes.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, bad("body: reading it: %v", err)
	}
	if len(b) > MaxBody {
		return nil, errorf(http.StatusRequestEntityTooLarge, "body: over %d bytes", MaxBody)
	}
	return b, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
