package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/domainapi"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// The CLI's copy of the domains API's shape and bounds (domain.go) agrees
// with the server's: every field the server writes is read back whole,
// with every field set and with none, and the bounds are the server's.
func TestDomainWireMatchesServer(t *testing.T) {
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	for name, d := range map[string]link.Domain{
		"full": {Host: "go.example.com", RootRedirect: "https://example.com/", NotFoundRedirect: "https://example.com/404",
			AppleAppSiteAssociation: json.RawMessage(`{"applinks":{}}`), Assetlinks: json.RawMessage(`[{"relation":[]}]`),
			Keys: []string{"0123456789abcdef"}, CreatedAt: at, UpdatedAt: at.Add(time.Hour), Version: 3},
		"bare": {Host: "x.example.org", CreatedAt: at, UpdatedAt: at, Version: 1},
	} {
		want, _ := json.Marshal(domainapi.ResponseOf(d))
		dec := json.NewDecoder(bytes.NewReader(want))
		dec.DisallowUnknownFields()
		var got Domain
		if err := dec.Decode(&got); err != nil {
			t.Errorf("%s: the CLI cannot read %s: %v", name, want, err)
			continue
		}
		if b, _ := json.Marshal(&got); !bytes.Equal(b, want) {
			t.Errorf("%s: read back as %s, want %s", name, b, want)
		}
	}
	// Every field the CLI sends on a create is one the server decodes.
	req := map[string]any{"host": "h"}
	f := domainFlags{rootRedirect: "a", notFoundRedirect: "b", keys: []string{"k"}}
	if err := f.fields(func(n string) bool { return n == "root-redirect" || n == "not-found-redirect" || n == "key" }, req); err != nil {
		t.Fatal(err)
	}
	req["apple_app_site_association"], req["assetlinks"] = json.RawMessage(`{}`), json.RawMessage(`[]`)
	b, _ := json.Marshal(req)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var sr domainapi.DomainRequest
	if err := dec.Decode(&sr); err != nil {
		t.Errorf("the server cannot read the CLI's create %s: %v", b, err)
	}
	if maxAppLinksFile != domainapi.MaxAppLinksFile || maxDomainKeys != domainapi.MaxKeys {
		t.Errorf("bounds differ from the server's")
	}
}
