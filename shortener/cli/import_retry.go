package cli

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// importRetryWaits are the pauses before each resend of an import batch
// the server answered 503: the batch endpoint applies a batch in one
// transaction and says "nothing was changed", so sending it again is
// safe. A loaded PostgreSQL can pass its statement timeout on one batch
// of a long import; the import goes on instead of stopping midway.
var importRetryWaits = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 15 * time.Second}

// postImportBatch posts an import batch, sending it again after a 503 (each
// resend noted on standard error), and decodes the answer into out.
func (im *importer) postImportBatch(ctx context.Context, body []byte, out any) error {
	for i := 0; ; i++ {
		_, err := im.c.getJSON(ctx, http.MethodPost, "/links/batch", nil, body, nil, out)
		ae, ok := err.(*APIError)
		if !ok || ae.Status != http.StatusServiceUnavailable || i == len(importRetryWaits) {
			return err
		}
		fmt.Fprintf(im.errw, "note: %v; sending the batch again in %v\n", ae, importRetryWaits[i])
		select {
		case <-ctx.Done():
			return err
		case <-time.After(importRetryWaits[i]):
		}
	}
}
