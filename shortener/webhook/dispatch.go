package webhook

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Dispatcher delivers the outbox's events to the endpoints of a Store, at
// least once: every instance runs one, each endpoint is served by the
// instance holding its lease, messages are made from the outbox and
// stored before they are sent, and a message counts as delivered only
// once its 2xx is recorded. A crash between sending and recording sends
// the message again (same id) from whichever instance takes the lease
// next.
type Dispatcher struct {
	Store  Store
	Log    link.EventLog
	Client *Client
	// Render turns an outbox event into what webhooks send; an error
	// stops the endpoint's round (the page is read again later); a zero
	// Rendered.Type leaves the event out.
	Render func(ctx context.Context, e link.Event) (Rendered, error)
	// Owner names this instance in leases; unique per instance.
	Owner string
	// LeaseFor is how long a lease lasts before it is renewed; default
	// 60s, at least 3 × the client's timeout.
	LeaseFor time.Duration
	// Poll is how often an endpoint's outbox and due messages are read
	// when idle; default 500ms.
	Poll time.Duration
	// Concurrency bounds the deliveries in flight per endpoint; default 8.
	Concurrency int
	// Page bounds the events read and the messages sent per round;
	// default 500.
	Page int
	// Observe, when set, hears of every attempt; OnError of every error
	// (a store outage, a lost lease); both must be quick.
	Observe func(endpoint string, a Attempt, o Outcome)
	OnError func(endpoint string, err error)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Retry says when a message is tried again after its attempts-th
	// attempt of the series failed, ok false when none is left; nil is
	// Next on the Schedule with its jitter. Tests set a fast one.
	Retry func(attempts int, now time.Time, retryAfter time.Duration) (time.Time, bool)

	mu      sync.Mutex
	running map[string]context.CancelFunc
}

func (d *Dispatcher) defaults() {
	if d.Poll <= 0 {
		d.Poll = 500 * time.Millisecond
	}
	if d.Concurrency <= 0 {
		d.Concurrency = 8
	}
	if d.Page <= 0 {
		d.Page = 500
	}
	if d.LeaseFor <= 0 {
		d.LeaseFor = 60 * time.Second
	}
	d.LeaseFor = max(d.LeaseFor, 3*d.timeout())
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Retry == nil {
		d.Retry = func(n int, now time.Time, ra time.Duration) (time.Time, bool) { return Next(n, now, ra, nil) }
	}
}

// Run serves endpoints until ctx ends: every Poll it lists them and keeps
// one worker per enabled endpoint, which tries for its lease.
func (d *Dispatcher) Run(ctx context.Context) {
	d.defaults()
	d.running = map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(d.Poll)
	defer t.Stop()
	for {
		d.supervise(ctx, &wg)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// supervise starts a worker for each enabled endpoint without one and
// stops those of endpoints deleted or disabled.
func (d *Dispatcher) supervise(ctx context.Context, wg *sync.WaitGroup) {
	eps, err := d.Store.Endpoints(ctx)
	if err != nil {
		d.fail("", err)
		return
	}
	want := map[string]bool{}
	for _, e := range eps {
		if !e.Disabled {
			want[e.ID] = true
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, stop := range d.running {
		if !want[id] {
			stop()
			delete(d.running, id)
		}
	}
	for id := range want {
		if d.running[id] == nil {
			wctx, stop := context.WithCancel(ctx)
			d.running[id] = stop
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.work(wctx, id)
			}()
		}
	}
}

func (d *Dispatcher) fail(endpoint string, err error) {
	if d.OnError != nil && err != nil && !errors.Is(err, context.Canceled) {
		d.OnError(endpoint, err)
	}
}

// work serves one endpoint while this instance holds its lease, trying
// for it every Poll while another does.
func (d *Dispatcher) work(ctx context.Context, id string) {
	p := pace{now: d.Concurrency, most: d.Concurrency}
	for ctx.Err() == nil {
		busy, err := d.round(ctx, id, &p)
		d.fail(id, err)
		if busy && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(d.Poll):
		}
	}
}

// round takes or renews the lease, turns the outbox's new events into
// messages, and sends the due ones. busy: a full page was read or sent,
// go on at once.
func (d *Dispatcher) round(ctx context.Context, id string, p *pace) (busy bool, err error) {
	leased := time.Now() // monotonic: the lease is trusted for LeaseFor from here, less a margin
	e, cur, ok, err := d.Store.Lease(ctx, id, d.Owner, d.LeaseFor)
	if err != nil || !ok || e.Disabled {
		return false, err
	}
	made, err := d.fill(ctx, e, cur)
	if err != nil {
		return false, err
	}
	sent, err := d.send(ctx, e, leased, p)
	return made || sent, err
}

// pace is an endpoint's deliveries in flight at once: halved when its
// receiver says it is overloaded (429, 502, 504: Throttle), one more after
// each round without, up to the Dispatcher's Concurrency.
type pace struct {
	now, most int
}

func (p *pace) after(throttled bool) {
	if throttled {
		p.now = max(1, p.now/2)
	} else if p.now < p.most {
		p.now++
	}
}

// fill reads a page of the outbox after the endpoint's cursor and stores
// its messages with the new cursor. made: the page was full.
func (d *Dispatcher) fill(ctx context.Context, e Endpoint, cur link.EventCursor) (bool, error) {
	events, _, err := d.Log.EventsAfter(ctx, cur, d.Page)
	if err != nil || len(events) == 0 {
		return false, err
	}
	rendered := make([]Rendered, len(events))
	for i, ev := range events {
		if rendered[i], err = d.Render(ctx, ev); err != nil {
			return false, err
		}
	}
	msgs, next := messagesFor(e, events, rendered, cur, d.Now())
	if next == cur && len(msgs) == 0 {
		return false, nil // a batch still filling
	}
	return len(events) == d.Page, d.Store.Enqueue(ctx, e.ID, d.Owner, msgs, next)
}

// send delivers the endpoint's due messages, at most p.now at once, and
// records the attempts. It sends only while the lease, taken at leased,
// has at least two timeouts left.
func (d *Dispatcher) send(ctx context.Context, e Endpoint, leased time.Time, p *pace) (bool, error) {
	due, err := d.Store.Due(ctx, e.ID, d.Now(), d.Page)
	if err != nil || len(due) == 0 {
		return false, err
	}
	deadline := leased.Add(d.LeaseFor - 2*d.timeout())
	results := make([]Result, len(due))
	sem := make(chan struct{}, p.now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	disable, throttled := "", false
	n := 0
	for i, m := range due {
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		n = i + 1
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, o := d.attempt(ctx, e, m)
			results[i] = r
			mu.Lock()
			defer mu.Unlock()
			switch o {
			case Disable:
				disable = "410 Gone at " + r.Attempt.At.UTC().Format(time.RFC3339)
			case Throttle:
				throttled = true
			}
		}()
	}
	wg.Wait()
	p.after(throttled)
	if n == 0 {
		return false, nil
	}
	return n == d.Page, d.Store.Settle(ctx, e.ID, d.Owner, results[:n], disable)
}

func (d *Dispatcher) timeout() time.Duration {
	if d.Client.Timeout > 0 {
		return d.Client.Timeout
	}
	return DefaultTimeout
}

// attempt sends one message and judges the answer: the Result to record
// and the outcome.
func (d *Dispatcher) attempt(ctx context.Context, e Endpoint, m Message) (Result, Outcome) {
	now := d.Now()
	n := m.Attempts + 1
	res := Result{Attempt: AttemptLog{Message: m.ID, N: n, At: now}}
	hdr, err := Headers(m.ID, now, m.Body, e.Signing(now)...)
	var a Attempt
	if err != nil {
		a = Attempt{Err: err}
	} else {
		a = d.Client.Send(ctx, e.URL, hdr, m.Body)
	}
	res.Attempt.Status, res.Attempt.Latency, res.Attempt.Body = a.Status, a.Latency, a.Body
	if a.Err != nil {
		res.Attempt.Error = a.Err.Error()
	}
	o := a.Outcome()
	if d.Observe != nil {
		d.Observe(e.ID, a, o)
	}
	switch o {
	case Delivered:
		res.State = StateDelivered
		return res, o
	case Disable:
		res.State = StateFailed
		return res, o
	}
	if next, ok := d.Retry(n-m.Series, d.Now(), a.RetryAfter); ok {
		res.State, res.NextAt = StatePending, next
	} else {
		res.State = StateFailed
	}
	return res, o
}
