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
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// Canaries: a user agent and an address no derived value contains.
const (
	canaryUA   = "Mozilla/5.0 (X11; Linux x86_64) CanaryBrowser/7.7.7"
	canaryAddr = "203.0.113.77"
)

// leakSink passes batches to a real sink and remembers any click that
// still carries an address or a user agent.
type leakSink struct {
	clicks.Sink
	mu     sync.Mutex
	leaked []clicks.Click
}

func (s *leakSink) ApplyClicks(ctx context.Context, b []clicks.Batch) (int, error) {
	s.mu.Lock()
	for _, batch := range b {
		for _, c := range batch.Clicks {
			if c.Addr.IsValid() || c.UA != "" {
				s.leaked = append(s.leaked, c)
			}
		}
	}
	s.mu.Unlock()
	return s.Sink.ApplyClicks(ctx, b)
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
	record := func(rec *clicks.Recorder) {
		for i := range 500 {
			rec.Record(clicks.Click{Code: testClickCodes[i%5], At: time.Now(), Class: clicks.ClassBrowser, Addr: addr, UA: canaryUA})
		}
	}
	t.Run("sink", func(t *testing.T) {
		sink := &leakSink{Sink: newTestEmbeddedClickSink(t)}
		rec := newTestRecorder(t, clicks.Config{Sink: sink})
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
		sink := &leakSink{Sink: newTestEmbeddedClickSink(t)}
		rec := newTestRecorder(t, clicks.Config{Sink: sink, Redis: rdb, KeyPrefix: prefix})
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

// Derive names device, OS and browser from the user agent; bots stay as
// ClassifyUserAgent calls them; a second look hits the cache alike.
func TestClickDeriveUserAgent(t *testing.T) {
	r := &clicks.Recorder{Ua: clicks.NewUAParser()}
	for _, tt := range []struct{ ua, device, os, browser string }{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", clicks.DeviceDesktop, "windows", "chrome"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", clicks.DeviceMobile, "ios", "safari"},
		{"Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.81 Mobile Safari/537.36", clicks.DeviceMobile, "android", "chrome"},
		{"Mozilla/5.0 (iPad; CPU OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Mobile/15E148 Safari/604.1", clicks.DeviceTablet, "ios", "safari"},
		{"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", clicks.DeviceDesktop, "linux", "firefox"},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", clicks.DeviceBot, clicks.UnknownDim, clicks.UnknownDim},
		{"curl/8.5.0", clicks.DeviceBot, clicks.UnknownDim, clicks.UnknownDim},
		{"", clicks.DeviceBot, clicks.UnknownDim, clicks.UnknownDim},
		{"SomeApp/1.0", clicks.DeviceOther, clicks.UnknownDim, clicks.UnknownDim},
	} {
		for range 2 {
			c := clicks.Click{Code: "abc1234", UA: tt.ua, Class: clicks.ClassifyUserAgent(tt.ua), Addr: netip.MustParseAddr(canaryAddr)}
			r.Derive(&c)
			if c.Device != tt.device || c.OS != tt.os || c.Browser != tt.browser || c.UA != "" || c.Addr.IsValid() {
				t.Errorf("derive(%.40q) = %q/%q/%q (UA %q, addr %v); want %q/%q/%q, both cleared",
					tt.ua, c.Device, c.OS, c.Browser, c.UA, c.Addr, tt.device, tt.os, tt.browser)
			}
			if clicks.ClickSize(c) < 0 {
				t.Errorf("derived click %+v is out of bounds", c)
			}
		}
	}
}

// Dimensions survive the stream; an entry of the earlier four-field
// format decodes with none; a hostile dimension is refused.
func TestClickEncodingDims(t *testing.T) {
	in := []clicks.Click{{Code: "abc1234", At: time.UnixMilli(1764547200000).UTC(), Class: clicks.ClassBrowser, Device: clicks.DeviceMobile, OS: "ios", Browser: "samsung browser"}}
	out, err := clicks.DecodeClicks(clicks.EncodeClicks(in))
	if err != nil || len(out) != 1 || out[0] != in[0] {
		t.Errorf("decode(encode(%+v)) = %+v, %v", in, out, err)
	}
	old, err := clicks.DecodeClicks("abc1234\t1764547200000\t0\texample.com\n")
	if err != nil || len(old) != 1 || old[0].Device != "" || old[0].Referrer != "example.com" {
		t.Errorf("four-field entry = %+v, %v", old, err)
	}
	for _, bad := range []string{"abc1234\t1\t0\t\tMOBILE\t\t\n", "abc1234\t1\t0\t\t" + strings.Repeat("x", clicks.MaxDimLen+1) + "\t\t\n"} {
		if _, err := clicks.DecodeClicks(bad); err == nil {
			t.Errorf("decodeClicks(%q) accepted a hostile dimension", bad)
		}
	}
}

// BenchmarkClickDerive measures the writer's derivation of a click from a
// mix of eight user agents (after the first, each a cache hit).
func BenchmarkClickDerive(b *testing.B) {
	r := &clicks.Recorder{Ua: clicks.NewUAParser()}
	uas := []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.81 Mobile Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c := clicks.Click{Code: "abc1234", UA: uas[i%len(uas)]}
		r.Derive(&c)
	}
}

// TestClickUniquesFromClients: clicks recorded with client addresses and
// user agents, 300 visitors twice each (and a bot), count 300 uniques on
// the embedded store: the writer hashes each client under the day's salt.
func TestClickUniquesFromClients(t *testing.T) {
	sink := newTestEmbeddedClickSink(t)
	rec := newTestRecorder(t, clicks.Config{Sink: sink})
	now := time.Now().UTC()
	for range 2 {
		for i := range 300 {
			addr := netip.AddrFrom4([4]byte{198, 51, byte(i / 256), byte(i % 256)})
			rec.Record(clicks.Click{Code: testClickCodes[0], At: now, Class: clicks.ClassBrowser, Addr: addr, UA: canaryUA})
		}
	}
	waitTotal(t, sink, 600, 10*time.Second)
	closeRecorder(t, rec)
	st, err := sink.ClickStats(context.Background(), testClickCodes[0], now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if st.Uniques < 294 || st.Uniques > 306 {
		t.Fatalf("uniques %d, want 300 within 2%%", st.Uniques)
	}
}
