package webhook

import "time"

// State is where a message is in its delivery.
type State string

const (
	// StatePending: waiting for its next attempt (NextAt).
	StatePending State = "pending"
	// StateDelivered: an attempt got a 2xx answer.
	StateDelivered State = "delivered"
	// StateFailed: every attempt of the Schedule failed, or the endpoint
	// answered 410 Gone. A replay makes it pending again.
	StateFailed State = "failed"
)

// Message is one delivery to one endpoint: one event, or a batch of click
// events. Its body is fixed when it is made, so every attempt and replay
// sends the same bytes under the same ID (webhook-id); each attempt signs
// them with its own webhook-timestamp.
type Message struct {
	ID       string // NewID: receivers dedupe on it
	Endpoint string
	Type     string    // the event type (a click batch: "click")
	At       time.Time // the event's time (the first event's for a batch)
	Body     []byte    // the JSON payload: {"type", "timestamp", "data"}
	Events   int       // events it carries: 1, or a batch's size

	State    State
	Attempts int       // attempts made, replays included (they number the attempt log)
	NextAt   time.Time // when a pending message is tried next
	// Series is how many of Attempts came before the last replay: the
	// Schedule counts from it, so a replayed message gets its attempts
	// anew.
	Series int
}

// AttemptLog is one attempt of a message as the API lists it.
type AttemptLog struct {
	Message string
	N       int // 1 for the first attempt
	At      time.Time
	Status  int // the answer's status, 0 if none
	Latency time.Duration
	Body    []byte // the start of the answer, at most KeptAnswerBytes
	Error   string // why no answer was read; "" when one was
}
