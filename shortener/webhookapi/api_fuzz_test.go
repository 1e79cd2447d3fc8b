package webhookapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// FuzzCreateEndpoint: any body either is refused with a 4xx and stores
// nothing, or creates an endpoint whose stored fields keep every bound
// (known types, none twice, filters bounded, batch bounds); never a 5xx.
// Then any merge patch on it keeps the same properties.
func FuzzCreateEndpoint(f *testing.F) {
	f.Add(`{"url":"URL","types":["click"]}`, `{"tags":["a"]}`)
	f.Add(`{"url":"URL","types":["link.created","click"],"tags":["x:y"],"codes":["abc"],"batch":5,"batch_wait_ms":10}`, `{"types":null}`)
	f.Add(`{"url":"URL","types":["click"],"description":"\u202e"}`, `{"batch":1e3}`)
	fx := newFixture(f, true)
	f.Fuzz(func(t *testing.T, body, patch string) {
		fx.t = t
		body = strings.ReplaceAll(body, "URL", fx.url)
		before, _ := fx.store.Endpoints(t.Context())
		st, got, _ := fx.do("POST", "/webhooks", body, true)
		after, _ := fx.store.Endpoints(t.Context())
		switch {
		case st >= 500:
			t.Fatalf("%s: %d %v", body, st, got)
		case st != 201 && len(after) != len(before):
			t.Fatalf("%s: refused (%d) yet stored", body, st)
		case st != 201:
			return
		}
		id, _ := got["id"].(string)
		fx.do("PATCH", "/webhooks/"+id, patch, true)
		e, err := fx.store.Endpoint(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		checkBounds(t, e)
		fx.do("DELETE", "/webhooks/"+id, "", true)
	})
}

func checkBounds(t *testing.T, e webhook.Endpoint) {
	if len(e.Types) == 0 || e.URL == "" || len(e.Tags) > webhook.MaxFilterValues || len(e.Codes) > webhook.MaxFilterValues ||
		e.Batch < 0 || e.Batch > webhook.MaxBatch || e.BatchWait < 0 || e.BatchWait > webhook.MaxBatchWait ||
		len(e.Description) > 4*webhook.MaxDescription || len(e.Keys) == 0 {
		t.Fatalf("stored endpoint out of bounds: %+v", e)
	}
	for i, ty := range e.Types {
		if !slices.Contains(webhook.EventTypes, ty) || slices.Contains(e.Types[:i], ty) {
			t.Fatalf("stored types %v", e.Types)
		}
	}
}
