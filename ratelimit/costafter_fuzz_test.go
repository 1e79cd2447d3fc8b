package ratelimit

import (
	"context"
	"math/big"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// digitsRE is the oracle's shape of a real cost: digits, space around.
var digitsRE = regexp.MustCompile(`^[ \t\r\n\v\f]*[0-9]+[ \t\r\n\v\f]*$`)

// FuzzCostAfterValue: whatever the upstream sends as the real cost, the
// cost charged is the value iff it is a non-negative integer of at most
// 2^50 (checked against math/big), else (invalid or absent) the fallback;
// no log line holds more than maxLoggedValue bytes of the value.
func FuzzCostAfterValue(f *testing.F) {
	const pre, fallback = 3, 9
	for _, s := range []string{"0", "100", " 42 ", "1125899906842624", "1125899906842625", "-1", "+5",
		"1e3", "0x10", "99999999999999999999999", "1,2", "", "٣", "12\x00"} {
		f.Add(s)
	}
	fb := int64(fallback)
	z := tokenZone("", 10, 60e9)
	z.CostAfter.Fallback = &fb
	h := costAfterHandler(nil, z)
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := h.Provision(ctx); err != nil {
		f.Fatal(err)
	}
	defer h.Cleanup()
	core, logs := observer.New(zap.DebugLevel)
	h.logger = zap.New(core)
	repl := caddy.NewReplacer()
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	f.Fuzz(func(t *testing.T, v string) {
		d := &zoneDecision{zone: z, cost: pre}
		hdr := http.Header{"X-Tokens-Used": {v}}
		got := h.realCost(d, hdr, req, repl, true)
		want := int64(fallback)
		switch {
		case digitsRE.MatchString(v) && strings.TrimSpace(v) == strings.Trim(v, " \t\r\n\v\f"):
			n, _ := new(big.Int).SetString(strings.TrimSpace(v), 10)
			if n.Cmp(big.NewInt(MaxRealCost)) <= 0 {
				want = n.Int64()
			}
		}
		if got != want {
			t.Errorf("real cost %q charged %d, want %d", v, got, want)
		}
		if ended := h.realCost(d, hdr, req, repl, false); ended != fallback {
			t.Errorf("real cost %q of a response that never ended charged %d, want the fallback %d", v, ended, fallback)
		}
		for _, e := range logs.TakeAll() {
			if s, _ := e.ContextMap()["value"].(string); len(v) > maxLoggedValue && strings.Contains(s, v[:maxLoggedValue+1]) {
				t.Errorf("log %q holds more than %d bytes of %q", e.Message, maxLoggedValue, v)
			}
		}
	})
}
