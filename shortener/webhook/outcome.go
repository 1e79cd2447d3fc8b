package webhook

import "net/http"

// Outcome is what an attempt's answer means for its message and endpoint.
type Outcome int

// Outcomes of an attempt, after the Standard Webhooks specification's
// status code handling.
const (
	// Retry: any answer but 2xx or 410 (3xx included: redirects are not
	// followed), a timeout, a connection error or a refused address.
	// The message is tried again by the Schedule.
	Retry Outcome = iota
	// Delivered: a 2xx status, the answer read without error.
	Delivered
	// Throttle: 429, 502 or 504, which say the receiver is overloaded.
	// Retry, and the dispatcher should send to this endpoint more slowly
	// (fewer deliveries at once).
	Throttle
	// Disable: 410 Gone, the receiver wants no more messages. The
	// endpoint is disabled; the message is kept as failed.
	Disable
)

// String names the outcome for logs and metrics labels.
func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Throttle:
		return "throttle"
	case Disable:
		return "disable"
	default:
		return "retry"
	}
}

// Classify judges an attempt by the status of its answer (0 if none) and
// its error (non-nil if the request or reading the answer failed).
func Classify(status int, err error) Outcome {
	switch {
	case err != nil || status == 0:
		return Retry
	case status >= 200 && status <= 299:
		return Delivered
	case status == http.StatusGone:
		return Disable
	case status == http.StatusTooManyRequests, status == http.StatusBadGateway, status == http.StatusGatewayTimeout:
		return Throttle
	default:
		return Retry
	}
}
