package domainapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/domainapi"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// FuzzCreateDomain: any body is either refused with a 4xx naming a field
// and stores nothing, or creates a domain whose host is canonical (a link
// domain name mapping to itself) and whose fields keep their bounds;
// never a 5xx. Then any merge patch on it keeps the same properties and
// never changes its host.
func FuzzCreateDomain(f *testing.F) {
	f.Add(`{"host":"Go.Example.COM."}`, `{"root_redirect":"https://example.com/"}`)
	f.Add(`{"host":"bücher.example","keys":["0123456789abcdef","0123456789abcdef"],"assetlinks":[{"a":1}]}`, `{"keys":null}`)
	f.Add(`{"host":"127.0.0.1"}`, `{"host":"other.example"}`)
	f.Add(`{"host":"a.example","root_redirect":"javascript:alert(1)"}`, `{"apple_app_site_association":"x"}`)
	s, err := store.OpenEmbedded(filepath.Join(f.TempDir(), "links.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	policy, err := urlpolicy.New([]string{"http", "https"}, nil, true)
	if err != nil {
		f.Fatal(err)
	}
	a := &domainapi.API{Store: s, Links: s, Revoker: s, CheckURL: func(raw string) (string, error) { return policy.Check(raw) }}
	do := func(t *testing.T, method, path, body string) (int, map[string]any) {
		r := httptest.NewRequest(method, "http://sho.rt/api"+path, strings.NewReader(body))
		w := httptest.NewRecorder()
		err := a.Serve(w, r, path, domainapi.Access{Write: true})
		var ae *domainapi.Error
		switch {
		case errors.As(err, &ae):
			if ae.Status == http.StatusBadRequest && !strings.Contains(ae.Msg, ":") {
				t.Fatalf("%s %s: a 400 naming no field: %q", method, body, ae.Msg)
			}
			return ae.Status, nil
		case err != nil:
			return 500, map[string]any{"error": err.Error()}
		}
		var out map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &out)
		return w.Code, out
	}
	f.Fuzz(func(t *testing.T, body, patch string) {
		ctx := context.Background()
		before, _ := s.Domains(ctx)
		st, got := do(t, "POST", "/domains", body)
		after, _ := s.Domains(ctx)
		switch {
		case st >= 500:
			t.Fatalf("%s: %d %v", body, st, got)
		case st != http.StatusCreated && len(after) != len(before):
			t.Fatalf("%s: refused (%d) yet stored", body, st)
		case st != http.StatusCreated:
			return
		}
		host, _ := got["host"].(string)
		if st, _ := do(t, "PATCH", "/domains/"+host, patch); st >= 500 {
			t.Fatalf("patch %s: %d", patch, st)
		}
		d, err := s.Domain(ctx, host)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		checkBounds(t, d)
		if st, _ := do(t, "DELETE", "/domains/"+host, ""); st != http.StatusNoContent {
			t.Fatalf("delete %s: %d", host, st)
		}
	})
}

func checkBounds(t *testing.T, d link.Domain) {
	if h, err := urlpolicy.LinkDomain(d.Host); err != nil || h != d.Host {
		t.Fatalf("stored host %q is not canonical (%q, %v)", d.Host, h, err)
	}
	if len(d.Keys) > domainapi.MaxKeys || len(d.AppleAppSiteAssociation) > domainapi.MaxAppLinksFile ||
		len(d.Assetlinks) > domainapi.MaxAppLinksFile || len(d.RootRedirect) > domainapi.MaxRedirect ||
		len(d.NotFoundRedirect) > domainapi.MaxRedirect {
		t.Fatalf("stored domain out of bounds: %+v", d)
	}
	for _, raw := range [][]byte{d.AppleAppSiteAssociation, d.Assetlinks} {
		if raw != nil && (!json.Valid(raw) || raw[0] != '{' && raw[0] != '[') {
			t.Fatalf("stored app links file %q", raw)
		}
	}
}
