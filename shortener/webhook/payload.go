package webhook

import (
	"encoding/json"
	"time"
)

// TypeClickBatch is the type of a message carrying several click events
// (an endpoint with Batch > 1): its data is {"clicks": [...]}, each
// element a click event's data.
const TypeClickBatch = "click.batch"

// Rendered is an outbox event as webhooks send it.
type Rendered struct {
	Type string          // the event type (EventTypes)
	At   time.Time       // when it happened
	Data json.RawMessage // the payload's data
	Code string          // the link's code, "" for an event of no link
	Tags []string        // the link's tags, for endpoints' tag filters
}

// payload is a message's JSON body, as the Standard Webhooks
// specification shapes it.
type payload struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Body is the JSON body of a message of one event.
func Body(r Rendered) ([]byte, error) {
	return json.Marshal(payload{Type: r.Type, Timestamp: r.At.UTC(), Data: r.Data})
}

// BatchBody is the JSON body of a message of several click events.
func BatchBody(clicks []Rendered) ([]byte, error) {
	data := struct {
		Clicks []json.RawMessage `json:"clicks"`
	}{make([]json.RawMessage, len(clicks))}
	for i, c := range clicks {
		data.Clicks[i] = c.Data
	}
	d, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(payload{Type: TypeClickBatch, Timestamp: clicks[0].At.UTC(), Data: d})
}
