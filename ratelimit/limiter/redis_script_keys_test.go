package limiter

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestScriptKeysDeclared runs every path of the Lua scripts (each
// algorithm with a ban and with Notify, several asks and several requests
// per call, absorb, refund, settle, lease refresh and release) on a Redis
// of the test's own under MONITOR, as the function and as the script, and
// checks each key a script touches (COMMAND GETKEYS of each command it
// runs) is one of the KEYS of its call, as the Redis scripting contract
// requires and Valkey- and Dragonfly-compatible servers enforce.
func TestScriptKeysDeclared(t *testing.T) {
	srv := testenv.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	lines := rawMonitor(t, srv.Addr())
	waitMarker(t, c, lines, "monitor-on")

	for _, mode := range []int32{runFunction, runScript} {
		s := NewRedisStore(c)
		s.co.calls.mode.Store(mode)
		runScriptPaths(t, s, fmt.Sprintf("m%d", mode))
	}
	calls, touched := 0, 0
	var declared map[string]bool
	for _, line := range waitMarker(t, c, lines, "monitor-off") {
		args, lua, ok := parseMonitorLine(line)
		if !ok || len(args) == 0 {
			continue
		}
		if !lua {
			declared = declaredKeys(args)
			if declared != nil {
				calls++
			}
			continue
		}
		keys, err := c.CommandGetKeys(ctx, toAny(args)...).Result()
		if err != nil { // a command without keys (TIME)
			continue
		}
		for _, k := range keys {
			touched++
			if !declared[k] {
				t.Errorf("a script touched %q (%s) outside its KEYS %v", k, strings.Join(args, " "), keysOf(declared))
			}
		}
	}
	if calls < 50 || touched < 100 {
		t.Errorf("%d script calls touching %d keys seen: the paths did not run", calls, touched)
	}
}

// runScriptPaths drives every path of the scripts on s, keys under prefix.
func runScriptPaths(t *testing.T, s *RedisStore, prefix string) {
	ctx := context.Background()
	ban := Ban{Duration: time.Minute, After: 2, Max: time.Hour}
	var asks []Ask
	for _, alg := range []string{TokenBucket, SlidingWindow, FixedWindow, SlidingLog, LeakyBucket} {
		lim := Limit{Algorithm: alg, Events: 2, Window: time.Minute}
		banned := Ask{Key: prefix + ":ban:" + alg, Limit: lim, Cost: 1, Ban: ban}
		notify := Ask{Key: prefix + ":{tag}notify:" + alg, Limit: lim, Cost: 1, Notify: true}
		for range 6 { // allowed, refused, a ban set, refused by it
			if _, err := s.Decide(ctx, []Ask{banned, notify}); err != nil {
				t.Fatal(err)
			}
		}
		asks = append(asks, banned, notify)
	}
	conc := Ask{Key: prefix + ":conc", Limit: Limit{Algorithm: Concurrency, Events: 1, Window: time.Minute}, Cost: 1, Lease: NewLeaseID()}
	if _, err := s.Decide(ctx, []Ask{conc}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup // coalesced: several requests per call
	for i := range 40 {
		wg.Go(func() {
			a := Ask{Key: prefix + ":many:" + strconv.Itoa(i%4), Limit: Limit{Events: 3, Window: time.Minute}, Cost: 1, Ban: ban}
			if _, err := s.Decide(ctx, []Ask{a}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := s.Absorb(ctx, asks[:6]); err != nil { // the algorithms that absorb: token bucket, the windows
		t.Fatal(err)
	}
	ps, err := appendParams(nil, asks)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.refund(ctx, asks, ps, time.Now().UnixMicro()); err != nil {
		t.Fatal(err)
	}
	settles := []Settlement{{Key: asks[0].Key, Limit: asks[0].Limit, Delta: -1}, {Key: asks[3].Key, Limit: asks[3].Limit, Delta: 1}}
	lease := Lease{Key: conc.Key, ID: conc.Lease, TTL: time.Minute}
	if _, err := s.Settle(ctx, time.Now(), settles, []Lease{lease}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Refresh(ctx, []Lease{lease}); err != nil {
		t.Fatal(err)
	}
	if err := s.releaseNow(ctx, []Lease{lease}); err != nil {
		t.Fatal(err)
	}
}

// waitMarker sends ECHO marker and returns the MONITOR lines up to it.
// rawMonitor runs MONITOR on a plain connection of its own (go-redis's
// Monitor hands its connection back to the pool while it still reads it,
// which the race detector reports) and sends each line it shows, until
// the test ends.
func rawMonitor(t *testing.T, addr string) <-chan string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1<<16)
	done, stop := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); conn.Close(); <-done })
	go func() {
		defer close(done)
		r := bufio.NewReaderSize(conn, 1<<16)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if l = strings.TrimRight(l, "\r\n"); strings.HasPrefix(l, "+") && l != "+OK" {
				select {
				case lines <- l[1:]:
				case <-stop:
					return
				}
			}
		}
	}()
	return lines
}

func waitMarker(t *testing.T, c *redis.Client, lines <-chan string, marker string) []string {
	t.Helper()
	if err := c.Echo(context.Background(), marker).Err(); err != nil {
		t.Fatal(err)
	}
	var out []string
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l := <-lines:
			if strings.Contains(l, `"echo" "`+marker+`"`) {
				return out
			}
			out = append(out, l)
		case <-deadline:
			t.Fatalf("MONITOR never showed %s", marker)
		}
	}
}

var monitorLine = regexp.MustCompile(`^\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$`)

// parseMonitorLine splits a MONITOR line into the command's arguments
// (unquoted as Redis quotes them: sdscatrepr) and whether a script ran it.
func parseMonitorLine(line string) (args []string, lua, ok bool) {
	m := monitorLine.FindStringSubmatch(line)
	if m == nil {
		return nil, false, false
	}
	rest := m[2]
	for len(rest) > 0 {
		rest = strings.TrimLeft(rest, " ")
		if !strings.HasPrefix(rest, `"`) {
			return nil, false, false
		}
		var b strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] != '\\' || i+1 >= len(rest) {
				b.WriteByte(rest[i])
				continue
			}
			i++
			switch rest[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'x':
				v, _ := strconv.ParseUint(rest[i+1:i+3], 16, 8)
				b.WriteByte(byte(v))
				i += 2
			default:
				b.WriteByte(rest[i])
			}
		}
		args = append(args, b.String())
		rest = rest[min(i+1, len(rest)):]
	}
	return args, m[1] == "lua", true
}

// declaredKeys returns the KEYS of a script call (FCALL, EVALSHA, EVAL);
// nil for any other command.
func declaredKeys(args []string) map[string]bool {
	switch strings.ToLower(args[0]) {
	case "fcall", "fcall_ro", "evalsha", "eval", "evalsha_ro", "eval_ro":
	default:
		return nil
	}
	n, err := strconv.Atoi(args[2])
	if err != nil || 3+n > len(args) {
		return nil
	}
	keys := map[string]bool{}
	for _, k := range args[3 : 3+n] {
		keys[k] = true
	}
	return keys
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The scripts' key convention, read off their source: the key argument of
// every redis.call and redis.pcall is a variable named key or bkey (TIME
// takes none), never an expression built in the script, and those
// variables are only bound to KEYS (KEYS[k], ipairs(KEYS)), to the ban key
// main took from KEYS (ban[4]), to the keys of the per-call caches those
// fill (pairs(cache), pairs(ban_cache)), or as function parameters fed by
// them. TestScriptKeysDeclared checks the same at run time.
func TestScriptKeyArguments(t *testing.T) {
	call := regexp.MustCompile(`redis\.p?call\(\s*'([A-Z]+)'\s*(?:,\s*([^,)]+))?`)
	bind := regexp.MustCompile(`(?m)(?:local\s+|for\s+(?:\w+,\s*)?)\b(key|bkey)\b(?:,\s*\w+)*\s*(=|in)\s*([^\n]*)`)
	allowed := []string{"KEYS[", "ipairs(KEYS) do", "pairs(cache) do", "pairs(ban_cache) do", "ban[4]"}
	scripts := map[string]string{"decide.lua": decideMain, "concurrency.lua": concurrencyLua, "absorb.lua": absorbLua,
		"bans.lua": bansLua, "settle.lua": settleLua, "lease.lua": leaseLua}
	seen := 0
	for name, src := range scripts {
		for _, m := range call.FindAllStringSubmatch(src, -1) {
			seen++
			cmd, arg := m[1], strings.TrimSpace(m[2])
			if cmd == "TIME" {
				continue
			}
			if arg != "key" && arg != "bkey" {
				t.Errorf("%s: redis.call('%s', %s ...): the key argument is not the variable key or bkey", name, cmd, arg)
			}
		}
		for _, m := range bind.FindAllStringSubmatch(src, -1) {
			if !slicesContainsPrefix(allowed, strings.TrimSpace(m[3])) {
				t.Errorf("%s: %q binds %s to something other than KEYS", name, strings.TrimSpace(m[0]), m[1])
			}
		}
		if strings.Contains(src, "':ban'") || strings.Contains(src, `":ban"`) {
			t.Errorf("%s builds a ban key itself", name)
		}
	}
	if seen < 20 {
		t.Errorf("%d redis.call sites found: the scanner is broken", seen)
	}
}

// slicesContainsPrefix reports whether s starts with one of prefixes.
func slicesContainsPrefix(prefixes []string, s string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
