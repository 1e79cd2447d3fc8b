// Package openapitest checks what the shortener sends against its OpenAPI
// document, for tests of several packages.
package openapitest

import (
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

var (
	mu     sync.Mutex
	models = map[string]*libopenapi.DocumentModel[v3.Document]{}
)

// model builds doc's model once per document.
func model(t testing.TB, doc []byte) *libopenapi.DocumentModel[v3.Document] {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if m := models[string(doc)]; m != nil {
		return m
	}
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	models[string(doc)] = m
	return m
}

// CheckWebhookPayload validates a webhook message's body against the
// schema doc's webhooks section gives its type.
func CheckWebhookPayload(t testing.TB, doc []byte, typ string, body []byte) {
	t.Helper()
	item := model(t, doc).Model.Webhooks.GetOrZero(typ)
	if item == nil || item.Post == nil {
		t.Fatalf("openapi.json documents no webhook %q", typ)
	}
	schema := item.Post.RequestBody.Content.GetOrZero("application/json").Schema.Schema()
	if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytesWithVersion(schema, body, 3.1); !ok {
		for _, e := range errs {
			t.Errorf("webhook %s: %s: %s %v", typ, body, e.Message, e.SchemaValidationErrors)
		}
	}
}
