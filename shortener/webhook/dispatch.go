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
	// Tags, when set, gives a click event's link tags, which Render then
	// leaves out: asked only for an endpoint that filters by tag (a
	// lookup per click costs more than the rest of its rendering).
	Tags func(ctx context.Context, e link.Event) ([]string, error)
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
	// Observe, when set, hears of every attempt (of message m, its
	// attempt number m.Attempts+1; m.Body is gone by then); OnError of
	// every error (a store outage, a lost lease); both must be quick.
	Observe func(endpoint string, m Message, a Attempt, o Outcome)
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
// for it every Poll while another does, and gives the lease up when it
// stops (what it sent and could not record is sent again by the next
// holder).
func (d *Dispatcher) work(ctx context.Context, id string) {
	p := pace{now: d.Concurrency, most: d.Concurrency}
	var l lease
	defer d.release(id, &l)
	for ctx.Err() == nil {
		busy, err := d.round(ctx, id, &p, &l)
		if err != nil {
			l.held = false // read the lease and the cursor again
		}
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

// release ends this instance's lease of the endpoint, if the store may
// still name it the holder, within a timeout of its own (the worker's
// context has ended).
func (d *Dispatcher) release(id string, l *lease) {
	if !l.taken {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	d.fail(id, d.Store.Release(ctx, id, d.Owner))
}

// releaseTimeout bounds giving a lease up at a stop: a store that does
// not answer leaves the lease to run out.
const releaseTimeout = 2 * time.Second

// lease is what a worker knows of its endpoint's lease: held since when
// (monotonic: trusted for LeaseFor from there, less a margin), and the
// outbox cursor, which only the holder moves. taken: the store may name
// this instance the holder (it took the lease, and has not been told
// since that another holds it), even while held is false after an error
// (a round cut short by a stop, a store outage).
type lease struct {
	held   bool
	taken  bool
	at     time.Time
	cursor link.EventCursor
	buf    roundBuffers
}

// roundBuffers hold what a round reads, kept for the next round: a busy
// endpoint reads thousands of events a round, several rounds a second.
type roundBuffers struct {
	page    []link.Event // a page as read, when the log is a link.EventAppender
	scratch []byte       // the page's data, when the log is a link.EventAppender
}

// round takes the lease, or renews it once half of it has passed (until
// then the endpoint is only read: renewing is a write), turns the outbox's
// new events into messages, and sends the due ones. busy: a full page was
// read or sent, go on at once.
func (d *Dispatcher) round(ctx context.Context, id string, p *pace, l *lease) (busy bool, err error) {
	var e Endpoint
	if now := time.Now(); l.held && now.Sub(l.at) < d.LeaseFor/2 {
		e, err = d.Store.Endpoint(ctx, id)
	} else {
		var ok bool
		e, l.cursor, ok, err = d.Store.Lease(ctx, id, d.Owner, d.LeaseFor)
		l.held, l.at = ok && err == nil, now
		l.taken = l.held || (l.taken && err != nil)
	}
	if err != nil || !l.held || e.Disabled {
		return false, err
	}
	made, err := d.fill(ctx, e, l)
	if err != nil {
		return false, err
	}
	sent, err := d.send(ctx, e, l.at, p)
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

// fill reads the outbox after the endpoint's cursor, Page events, or
// Page messages' worth for an endpoint batching clicks (up to
// maxRoundEvents), and stores their messages with the new cursor in one
// write. made: it read all it could take.
func (d *Dispatcher) fill(ctx context.Context, e Endpoint, l *lease) (bool, error) {
	cur := l.cursor
	want := min(d.Page*max(1, e.Batch), max(d.Page, maxRoundEvents))
	b := newBatcher(e, cur, d.Now())
	n, err := d.read(ctx, e, cur, want, &l.buf, b)
	if err != nil || n == 0 {
		b.drop(0)
		return false, err
	}
	msgs, next := b.done()
	if next == cur && len(msgs) == 0 {
		return false, nil // a batch still filling
	}
	err = d.Store.Enqueue(ctx, e.ID, d.Owner, msgs, next)
	releaseBodies(msgs) // the store has its copies
	if err != nil {
		return false, err
	}
	l.cursor = next
	return n == want, nil
}

// maxRoundEvents bounds the events one round reads for an endpoint
// batching clicks: a round's messages are stored in one write, and one
// write per 10,000 clicks costs little next to one per page.
const maxRoundEvents = 10000

// read reads up to want events after cur, a page (at most Page) at a
// time, renders each for endpoint e and gives it to b as it comes (a page
// at a time in memory, in buf's): how many it read.
func (d *Dispatcher) read(ctx context.Context, e Endpoint, cur link.EventCursor, want int, buf *roundBuffers, b *batcher) (int, error) {
	n := 0
	for n < want {
		ask := min(d.Page, want-n)
		page, next, err := d.readPage(ctx, cur, ask, buf)
		if err != nil {
			return 0, err
		}
		for _, ev := range page {
			r, err := d.render(ctx, e, ev)
			if err != nil {
				return 0, err
			}
			b.add(ev.Cursor, r)
		}
		n += len(page)
		if len(page) < ask {
			break
		}
		cur = next
	}
	return n, nil
}

// render is Render's rendering of ev, with its link's tags from Tags when
// endpoint e filters a click by them.
func (d *Dispatcher) render(ctx context.Context, e Endpoint, ev link.Event) (Rendered, error) {
	r, err := d.Render(ctx, ev)
	if err == nil && r.Type == TypeClick && len(e.Tags) > 0 && d.Tags != nil {
		r.Tags, err = d.Tags(ctx, ev)
	}
	return r, err
}

// readPage reads up to ask events after cur, into buf's memory when the
// log can (the last page's events have been given to the batcher, which
// copied what it keeps).
func (d *Dispatcher) readPage(ctx context.Context, cur link.EventCursor, ask int, buf *roundBuffers) ([]link.Event, link.EventCursor, error) {
	a, ok := d.Log.(link.EventAppender)
	if !ok {
		return d.Log.EventsAfter(ctx, cur, ask)
	}
	clear(buf.page) // the last page's events: let their memory go
	page, scratch, next, err := a.AppendEventsAfter(ctx, buf.page[:0], buf.scratch[:0], cur, ask)
	buf.page, buf.scratch = page, scratch
	return page, next, err
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
		a = d.Client.sendBody(ctx, e.URL, hdr, m.Body, true) // Due's bodies are BodyBuffer's
	}
	res.Attempt.Status, res.Attempt.Latency, res.Attempt.Body = a.Status, a.Latency, a.Body
	if a.Err != nil {
		res.Attempt.Error = a.Err.Error()
	}
	o := a.Outcome()
	if d.Observe != nil {
		d.Observe(e.ID, m, a, o)
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
