package shortener

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/strictjson"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/targeting"
)

// previewRequest is the body of POST <api>/rules/preview: a link's rules
// and variants, judged as a create judges them, and a visitor.
type previewRequest struct {
	// Code is the link's code, which the A/B bucket depends on; default
	// "preview".
	Code     string          `json:"code,omitempty"`
	Rules    json.RawMessage `json:"rules,omitempty"`
	Variants json.RawMessage `json:"variants,omitempty"`
	Visitor  previewVisitor  `json:"visitor"`
}

// previewVisitor is what a redirect would know of a visit; each absent
// value is unknown (it matches no condition on it).
type previewVisitor struct {
	UserAgent      string `json:"user_agent,omitempty"`
	AcceptLanguage string `json:"accept_language,omitempty"`
	// IP: the client address; Country, when absent, is looked up from it
	// with clicks_geoip.
	IP      string `json:"ip,omitempty"`
	Country string `json:"country,omitempty"`
	// Query is a raw query string ("src=qr&x=1").
	Query string `json:"query,omitempty"`
	// At (RFC 3339): the time of the visit; default now.
	At string `json:"at,omitempty"`
}

// previewAnswer is where the visit would go: the rule and variant chosen
// (null for none), the destination (null: the link's own long URL), the
// app URL of an app rule, and what the user agent was read as.
type previewAnswer struct {
	Rule    *string `json:"rule"`
	Variant *string `json:"variant"`
	URL     *string `json:"url"`
	AppURL  *string `json:"app_url"`
	Device  string  `json:"device"`
	OS      string  `json:"os"`
	Browser string  `json:"browser"`
	Country string  `json:"country"`
}

// apiPreview answers POST <api>/rules/preview: what the rules would do
// for one visitor, as a redirect decides it (same rules, same user-agent
// parser, GeoIP and visitor key), storing nothing. The dashboard's rule
// editor previews with it.
func (h *Handler) apiPreview(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, maxBody)
	if err != nil {
		return err
	}
	var req previewRequest
	if err := strictjson.Decode(body, &req); err != nil {
		return apiErr(http.StatusBadRequest, "invalid JSON body: %v", err)
	}
	t, err := h.compileTargeting(r, req.Rules, req.Variants)
	if err != nil {
		return apiErr(http.StatusBadRequest, "%s", targetingMessage(targetingField(err), err))
	}
	set, _ := targeting.Parse(t, targeting.Options{}) // judged just above
	vr, addr, now, err := h.previewVisit(req.Visitor)
	if err != nil {
		return err
	}
	code := req.Code
	if code == "" {
		code = "preview"
	}
	v, _ := h.visitor(vr, code, ^targeting.Needs(0), addr, now)
	if req.Visitor.Country != "" {
		v.Country = req.Visitor.Country
	}
	d := set.Decide(&v)
	writeJSON(w, http.StatusOK, previewAnswer{Rule: nullIfEmpty(d.RuleName), Variant: nullIfEmpty(d.VariantName),
		URL: nullIfEmpty(d.URL), AppURL: nullIfEmpty(d.AppURL), Device: v.Device, OS: v.OS, Browser: v.Browser,
		Country: v.Country})
	return nil
}

// previewVisit judges a preview's visitor into the request a redirect
// would have seen, its address and time; a bad value is a 400 naming it.
func (h *Handler) previewVisit(pv previewVisitor) (*http.Request, netip.Addr, time.Time, error) {
	var addr netip.Addr
	now := h.now()
	switch {
	case len(pv.UserAgent) > clicks.MaxUserAgent:
		return nil, addr, now, apiErr(http.StatusBadRequest, "visitor.user_agent is longer than %d bytes", clicks.MaxUserAgent)
	case len(pv.AcceptLanguage) > targeting.MaxAcceptLanguage:
		return nil, addr, now, apiErr(http.StatusBadRequest, "visitor.accept_language is longer than %d bytes", targeting.MaxAcceptLanguage)
	case len(pv.Query) > targeting.MaxRawQuery:
		return nil, addr, now, apiErr(http.StatusBadRequest, "visitor.query is longer than %d bytes", targeting.MaxRawQuery)
	case pv.Country != "" && (len(pv.Country) != 2 || !clicks.ValidCountry(pv.Country)):
		return nil, addr, now, apiErr(http.StatusBadRequest, "visitor.country must be an upper-case ISO 3166-1 alpha-2 code")
	}
	if pv.IP != "" {
		var err error
		if addr, err = netip.ParseAddr(pv.IP); err != nil || addr.Zone() != "" {
			return nil, addr, now, apiErr(http.StatusBadRequest, "visitor.ip must be an IPv4 or IPv6 address")
		}
	}
	if pv.At != "" {
		t, err := link.ParseTime(pv.At)
		if err != nil {
			return nil, addr, now, apiErr(http.StatusBadRequest, "visitor.at must be an RFC 3339 time")
		}
		now = t
	}
	r := &http.Request{Header: http.Header{}, URL: &url.URL{RawQuery: pv.Query}}
	if pv.UserAgent != "" {
		r.Header["User-Agent"] = []string{pv.UserAgent}
	}
	if pv.AcceptLanguage != "" {
		r.Header["Accept-Language"] = []string{pv.AcceptLanguage}
	}
	return r, addr, now, nil
}

// nullIfEmpty is s, or nil (JSON null) when empty.
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
