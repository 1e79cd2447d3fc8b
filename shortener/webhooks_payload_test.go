package shortener

import (
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

var (
	hookModelOnce sync.Once
	hookModel     *libopenapi.DocumentModel[v3.Document]
	hookModelErr  error
)

// checkWebhookPayload validates a message's body against the schema the
// document's webhooks section gives its type.
func checkWebhookPayload(t testing.TB, typ string, body []byte) {
	t.Helper()
	hookModelOnce.Do(func() {
		doc, err := libopenapi.NewDocument(openAPIDocument)
		if err != nil {
			hookModelErr = err
			return
		}
		hookModel, hookModelErr = doc.BuildV3Model()
	})
	if hookModelErr != nil {
		t.Fatalf("openapi.json: %v", hookModelErr)
	}
	item := hookModel.Model.Webhooks.GetOrZero(typ)
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
