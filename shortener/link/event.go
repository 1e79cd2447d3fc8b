package link

import (
	"context"
	"time"
)

// Types of the link events a store records (webhooks announce them).
const (
	EventCreated   = "link.created"
	EventUpdated   = "link.updated"
	EventRevoked   = "link.revoked"
	EventMaxClicks = "link.max_clicks_reached"
	EventExpired   = "link.expired"
)

// Event is one entry of a store's outbox, recorded in the statement or
// transaction of what it announces, so a change that commits has its
// event and one that does not has none: a change of a link (the Event*
// types above, Link the link as the change left it), or a click counted
// by the click sink (type "click", Data its JSON, clicks.ClickEvent).
type Event struct {
	// Cursor is the event's place in the log (EventsAfter from it reads
	// the events after it).
	Cursor EventCursor
	ID     string // "evt_" and 32 hex digits, unique
	Type   string
	At     time.Time
	Code   string // the link's
	Link   Link   // link events
	Data   []byte // other events: their data as recorded (JSON)
}

// EventLog is a store's outbox of link events; both stores implement it.
// A store records events only when told to (its Events field: the
// handler has webhooks), from then on for every change: create (batch
// and import included), edit, revocation, and the redirect that uses up
// a link's max_clicks.
type EventLog interface {
	// EventsAfter returns up to limit events after the cursor, in log
	// order. Only events that can no longer
	// be overtaken are returned: an event committed later never gets a
	// place before one already read, so reading from the last cursor
	// misses none. The zero cursor is the log's start.
	EventsAfter(ctx context.Context, after EventCursor, limit int) ([]Event, EventCursor, error)
	// EventsEnd returns the cursor of the log's end: EventsAfter from it
	// reads only events not yet readable now.
	EventsEnd(ctx context.Context) (EventCursor, error)
}

// EventAppender is an EventLog that also reads into a caller's memory: a
// reader of thousands of events a second (the webhook dispatcher) keeps
// it. AppendEventsAfter appends to dst what EventsAfter returns, the
// events' Data written in scratch's memory (appended to it, returned with
// what it holds): a caller that reuses scratch is done with the Data of
// the events read into it before.
type EventAppender interface {
	AppendEventsAfter(ctx context.Context, dst []Event, scratch []byte, after EventCursor, limit int) ([]Event, []byte, EventCursor, error)
}

// EventRecorder records events that no write of a link store causes:
// the rate limiter's, heard through Caddy's events. Each event's ID,
// Type, At and Data (JSON) are kept as given; Code is empty. Both stores
// implement it; the events are recorded whether or not the store's Events
// is on (the caller records only for webhooks).
type EventRecorder interface {
	RecordEvents(ctx context.Context, events []Event) error
}

// ExpiryLog records link.expired events: a link expires by time, with no
// write to record it with. Both stores implement it.
type ExpiryLog interface {
	// RecordExpired records a link.expired event (at the link's expiry)
	// for every live link whose expiry is after the store's mark and not
	// after upTo, and moves the mark to upTo, in one transaction: each
	// expiry is recorded once, by whichever instance gets there first. The
	// first call only sets the mark (links that expired before webhooks
	// were on are not announced). It returns how many it recorded.
	RecordExpired(ctx context.Context, upTo time.Time) (int, error)
}

// EventCursor is a place in an EventLog: events are ordered by Tx, then
// Seq. PostgreSQL: Tx is the recording transaction's id (xid8), Seq the
// event's number; the embedded store, whose transactions commit one at a
// time in number order, keeps Tx 0.
type EventCursor struct {
	Tx, Seq int64
}

// Less orders cursors as their log does.
func (c EventCursor) Less(o EventCursor) bool {
	return c.Tx < o.Tx || c.Tx == o.Tx && c.Seq < o.Seq
}
