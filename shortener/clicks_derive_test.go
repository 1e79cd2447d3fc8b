package shortener

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// Canaries: a user agent and an address no derived value contains.
const (
	canaryUA   = "Mozilla/5.0 (X11; Linux x86_64) CanaryBrowser/7.7.7"
	canaryAddr = "203.0.113.77"
)

// leakSink passes batches to a real sink and remembers any click that
// still carries an address or a user agent.
type leakSink struct {
	ClickSink
	mu     sync.Mutex
	leaked []Click
}

func (s *leakSink) ApplyClicks(ctx context.Context, b []ClickBatch) (int, error) {
	s.mu.Lock()
	for _, batch := range b {
		for _, c := range batch.Clicks {
			if c.Addr.IsValid() || c.UA != "" {
				s.leaked = append(s.leaked, c)
			}
		}
	}
	s.mu.Unlock()
	return s.ClickSink.ApplyClicks(ctx, b)
}

// redisArgs records every argument sent to Redis, as text.
type redisArgs struct {
	mu   sync.Mutex
	args []string
}

func (h *redisArgs) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *redisArgs) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd)
		return next(ctx, cmd)
	}
}
func (h *redisArgs) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.add(c)
		}
		return next(ctx, cmds)
	}
}
func (h *redisArgs) add(cmd redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range cmd.Args() {
		h.args = append(h.args, fmt.Sprint(a))
	}
}

// The client's address and user agent reach the writer and stop there:
// no click given to a sink carries them, and no Redis command holds them.
func TestClickAddressAndUserAgentStayInProcess(t *testing.T) {
	addr := netip.MustParseAddr(canaryAddr)
	record := func(rec *ClickRecorder) {
		for i := range 500 {
			rec.Record(Click{Code: testClickCodes[i%5], At: time.Now(), Class: ClassBrowser, Addr: addr, UA: canaryUA})
		}
	}
	t.Run("sink", func(t *testing.T) {
		sink := &leakSink{ClickSink: newTestEmbeddedClickSink(t)}
		rec := newTestRecorder(t, ClickConfig{Sink: sink})
		record(rec)
		waitTotal(t, sink, 500, 10*time.Second)
		closeRecorder(t, rec)
		if len(sink.leaked) > 0 {
			t.Errorf("%d clicks reached the sink with an address or user agent, e.g. %+v", len(sink.leaked), sink.leaked[0])
		}
	})
	t.Run("redis", func(t *testing.T) {
		rdb, prefix := testenv.Redis(t)
		var sent redisArgs
		rdb.AddHook(&sent)
		sink := &leakSink{ClickSink: newTestEmbeddedClickSink(t)}
		rec := newTestRecorder(t, ClickConfig{Sink: sink, Redis: rdb, KeyPrefix: prefix})
		record(rec)
		waitTotal(t, sink, 500, 10*time.Second)
		closeRecorder(t, rec)
		if len(sink.leaked) > 0 {
			t.Errorf("%d clicks reached the sink with an address or user agent, e.g. %+v", len(sink.leaked), sink.leaked[0])
		}
		sent.mu.Lock()
		defer sent.mu.Unlock()
		var entries int
		for _, a := range sent.args {
			if strings.Contains(a, "CanaryBrowser") || strings.Contains(a, canaryAddr) {
				t.Fatalf("a Redis command carried the user agent or address: %.200q", a)
			}
			if strings.Contains(a, testClickCodes[0]+"\t") {
				entries++
			}
		}
		if entries == 0 {
			t.Fatal("no stream entry was seen: the hook saw nothing")
		}
	})
}
