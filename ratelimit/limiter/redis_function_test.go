package limiter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// functionLoaded reports whether c's server holds this version's library.
func functionLoaded(t *testing.T, c redis.UniversalClient) bool {
	t.Helper()
	libs, err := c.FunctionList(context.Background(), redis.FunctionListQuery{LibraryNamePattern: decideFunction}).Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(libs) == 1
}

// A store on a server with functions decides by FCALL, each call with
// state of its own: the library's definitions live across calls, what a
// call read (a key's state, its ban) does not.
func TestDecideFunctionStateIsPerCall(t *testing.T) {
	c, prefix := testenv.Redis(t)
	s := NewRedisStore(c)
	a := Ask{Key: StoreKey(prefix, "fn", "", "k"), Limit: Limit{Algorithm: FixedWindow, Events: 5, Window: time.Minute}, Cost: 1,
		Ban: Ban{Duration: time.Minute, After: 1, Max: time.Hour}}
	for want := int64(4); want >= 2; want-- {
		if r := ask1(t, s, a); !r.Allowed || r.Remaining != want {
			t.Fatalf("remaining %d (allowed %v), want %d", r.Remaining, r.Allowed, want)
		}
	}
	if s.co.calls.mode.Load() != runFunction || !functionLoaded(t, c) {
		t.Fatalf("runner mode %d, library loaded %v: want the function", s.co.calls.mode.Load(), functionLoaded(t, c))
	}
	c.Del(context.Background(), a.Key)
	if r := ask1(t, s, a); !r.Allowed || r.Remaining != 4 {
		t.Fatalf("after DEL: remaining %d (allowed %v), want 4: a call kept an earlier call's state", r.Remaining, r.Allowed)
	}
	for range 4 {
		ask1(t, s, a)
	}
	if r := ask1(t, s, a); r.Allowed || !r.BanSet {
		t.Fatalf("the 6th request: %+v, want refused with its ban set", r)
	}
	c.Del(context.Background(), a.Key, BanKey(a.Key))
	if r := ask1(t, s, a); !r.Allowed || r.Banned {
		t.Fatalf("after DEL of the key and its ban: %+v, want allowed: a call kept an earlier call's ban", r)
	}
}

// A library gone from the server (FUNCTION DELETE or FLUSH, a restart
// without persistence) is loaded again by the next decision.
func TestDecideFunctionLoadedAgain(t *testing.T) {
	c, prefix := testenv.Redis(t)
	s := NewRedisStore(c)
	a := Ask{Key: StoreKey(prefix, "fn", "", "again"), Limit: Limit{Algorithm: TokenBucket, Events: 10, Window: time.Minute}, Cost: 1}
	ask1(t, s, a)
	if err := c.FunctionDelete(context.Background(), decideFunction).Err(); err != nil {
		t.Fatal(err)
	}
	if r := ask1(t, s, a); !r.Allowed || r.Remaining != 8 {
		t.Fatalf("after FUNCTION DELETE: %+v, want allowed with 8 left", r)
	}
	if s.co.calls.mode.Load() != runFunction || !functionLoaded(t, c) {
		t.Fatal("the library was not loaded again")
	}
}

// aclUser creates a user of the test Redis allowed every command but
// those denied (ACL rules such as "-fcall") and returns a client logged in
// as that user; the user is deleted when the test ends.
func aclUser(t *testing.T, admin *redis.Client, deny ...string) *redis.Client {
	t.Helper()
	name := "edgekit-test-" + testenv.RandomID(6)
	rules := append([]any{"ACL", "SETUSER", name, "on", ">secret", "~*", "&*", "+@all"}, toAny(deny)...)
	if err := admin.Do(context.Background(), rules...).Err(); err != nil {
		t.Fatal(err)
	}
	opts := *admin.Options()
	opts.Username, opts.Password = name, "secret"
	c := redis.NewClient(&opts)
	t.Cleanup(func() {
		c.Close()
		admin.Do(context.Background(), "ACL", "DELUSER", name)
	})
	return c
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// A server that refuses functions (an ACL without FCALL, or without
// FUNCTION LOAD while the library is missing; Redis 6 answers both
// "unknown command") gets the script: every decision is answered, the
// first one included, and the runner stays on the script. The server is
// the test's own: deleting the library on a shared one races every other
// test process loading it again.
func TestDecideFunctionRefusedFallsBackToScript(t *testing.T) {
	srv := testenv.StartRedis(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { admin.Close() })
	prefix := "fn-" + testenv.RandomID(6)
	for _, tc := range []struct {
		name   string
		deny   []string
		delete bool // the library missing first
	}{
		{"no fcall", []string{"-fcall"}, false},
		{"no function load", []string{"-function"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.delete {
				admin.FunctionDelete(context.Background(), decideFunction)
			}
			c := aclUser(t, admin, tc.deny...)
			s := NewRedisStore(c)
			a := Ask{Key: StoreKey(prefix, "fn", "", strings.ReplaceAll(tc.name, " ", "-")), Limit: Limit{Algorithm: FixedWindow, Events: 3, Window: time.Minute}, Cost: 1}
			for want := int64(2); want >= 0; want-- {
				if r := ask1(t, s, a); !r.Allowed || r.Remaining != want {
					t.Fatalf("remaining %d (allowed %v), want %d", r.Remaining, r.Allowed, want)
				}
			}
			if r := ask1(t, s, a); r.Allowed {
				t.Fatal("the 4th request of 3 allowed")
			}
			if s.co.calls.mode.Load() != runScript {
				t.Errorf("runner mode %d, want the script", s.co.calls.mode.Load())
			}
		})
	}
}

// On a Cluster the library is loaded on every master, and batches that
// span slots (one FCALL per slot, pipelined) are decided by the function.
func TestDecideFunctionCluster(t *testing.T) {
	c, prefix := testenv.RedisCluster(t)
	ctx := context.Background()
	_ = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.FunctionDelete(ctx, decideFunction).Err() // absent already: an error, ignored
	})
	s := NewRedisStore(c)
	limit := Limit{Algorithm: SlidingWindow, Events: 1000, Window: time.Minute}
	var asks []Ask
	for i := range 12 {
		asks = append(asks, Ask{Key: StoreKey(prefix, "fn", "", strings.Repeat("k", i+1)), Limit: limit, Cost: 1})
	}
	var wg sync.WaitGroup
	for _, a := range asks { // at once: batches span slots
		wg.Go(func() {
			if got := decideConcurrently(t, s, a, 50); got != 50 {
				t.Errorf("%s: %d of 50 allowed", a.Key, got)
			}
		})
	}
	wg.Wait()
	if s.co.calls.mode.Load() != runFunction {
		t.Fatal("the runner left the function")
	}
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		if !functionLoaded(t, n) {
			t.Errorf("master %s lacks the library", n.Options().Addr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// replyError is an error reply of a server, as go-redis returns them.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// Only the server's own answers turn the runner: a Lua error that quotes
// the same words does not, nor a client's error.
func TestScriptRunnerErrorsRead(t *testing.T) {
	for _, tc := range []struct {
		err              string
		missing, refused bool
	}{
		{"ERR Function not found", true, false},
		{"ERR unknown command 'fcall', with args beginning with: 'edgekit_decide_x' ", false, true},
		{"ERR unknown subcommand 'load'. Try FUNCTION HELP.", false, true},
		{"NOPERM User u has no permissions to run the 'fcall' command", false, true},
		{"ERR user_function:12: Script attempted to access nonexistent global variable 'x' (Function not found)", false, false},
		{"ERR user_function:3: Unknown Redis command called from script", false, false},
		{"LOADING Redis is loading the dataset in memory", false, false},
	} {
		if isFunctionMissing(errors.New(tc.err)) || (&scriptRunner{}).refused(errors.New(tc.err)) {
			t.Errorf("%q, not from a server, read as its answer", tc.err)
		}
		r := &scriptRunner{}
		err := fmt.Errorf("wrapped: %w", replyError(tc.err))
		if got := isFunctionMissing(err); got != tc.missing {
			t.Errorf("%q: missing %v, want %v", tc.err, got, tc.missing)
		}
		if got := r.refused(err); got != tc.refused || (r.mode.Load() == runScript) != tc.refused {
			t.Errorf("%q: refused %v (mode %d), want %v", tc.err, got, r.mode.Load(), tc.refused)
		}
	}
}
