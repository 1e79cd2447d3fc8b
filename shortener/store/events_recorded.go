package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// maxRecordedEvent bounds one recorded event's data (the rate limiter's
// are a few hundred bytes).
const maxRecordedEvent = 16 << 10

// checkRecorded judges events given to RecordEvents: each with an ID, a
// type that is neither a link's nor a click's (those are recorded by the
// writes they announce, and read back as such), and data that is JSON.
func checkRecorded(ctx context.Context, events []link.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, e := range events {
		switch {
		case e.ID == "" || len(e.ID) > 64:
			return fmt.Errorf("recording events: id %q is empty or over 64 bytes", e.ID)
		case e.Type == "" || e.Type == clicks.EventType || strings.HasPrefix(e.Type, linkEventPrefix):
			return fmt.Errorf("recording events: event %s: type %q is not one to record", e.ID, e.Type)
		case len(e.Data) > maxRecordedEvent || !json.Valid(e.Data):
			return fmt.Errorf("recording events: event %s: data is not JSON of at most %d bytes", e.ID, maxRecordedEvent)
		}
	}
	return nil
}
