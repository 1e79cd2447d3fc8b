package limiter

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// decideFunction is decide.lua as a Redis function library (Redis 7+,
// Valkey): FUNCTION LOAD defines its Lua functions once, where EVALSHA
// defines them again on every call (about 5 µs of Redis CPU per call,
// measured with redis-benchmark, of 16 for a call deciding one request).
// The library and its function are named after a digest of the source,
// so that instances running different versions of the module, sharing
// one Redis, each call their own.
var decideFunction = "edgekit_decide_" + sourceDigest(decideBody)

// decideLibrary is the library's code, as FUNCTION LOAD takes it.
var decideLibrary = "#!lua name=" + decideFunction + "\n" +
	includeLua(decideBody, "entry", "redis.register_function('"+decideFunction+"', main)")

func sourceDigest(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// How a store runs decide.lua (scriptRunner.mode).
const (
	runFunction = iota // FCALL, loading the library where it is missing
	runScript          // EVALSHA (EVAL on NOSCRIPT): the server has no functions, or refuses them
)

// scriptRunner runs the coalesced decisions of a store: as the function
// while the server takes it, else as the script. A server that refuses
// FCALL or FUNCTION LOAD (Redis 6, an ACL without them) turns the runner
// to the script for good; a function missing (a server restarted empty, a
// FUNCTION FLUSH, a failover to a node without it) is loaded again.
type scriptRunner struct {
	c    redis.UniversalClient
	mode atomic.Int32
}

// run makes one call.
func (r *scriptRunner) run(ctx context.Context, keys []string, args []any) (any, error) {
	if r.mode.Load() == runFunction {
		v, err := r.c.FCall(ctx, decideFunction, keys, args...).Result()
		if isFunctionMissing(err) && r.load(ctx) {
			v, err = r.c.FCall(ctx, decideFunction, keys, args...).Result()
		}
		if !r.unanswered(err) {
			return v, err
		}
	}
	return decideScript.Run(ctx, r.c, keys, args...).Result()
}

// runEach makes one call per keys[i] and args[i] in one pipeline (one
// per Cluster node) and returns each call's command.
func (r *scriptRunner) runEach(ctx context.Context, keys [][]string, args [][]any) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(keys))
	all := make([]int, len(keys))
	for i := range all {
		all[i] = i
	}
	redo := all
	if r.mode.Load() == runFunction {
		r.pipeline(ctx, cmds, redo, func(p redis.Pipeliner, i int) *redis.Cmd {
			return p.FCall(ctx, decideFunction, keys[i], args[i]...)
		})
		if missing := failed(cmds, all, isFunctionMissing); len(missing) > 0 && r.load(ctx) {
			r.pipeline(ctx, cmds, missing, func(p redis.Pipeliner, i int) *redis.Cmd {
				return p.FCall(ctx, decideFunction, keys[i], args[i]...)
			})
		}
		redo = failed(cmds, all, r.unanswered)
	}
	if len(redo) == 0 {
		return cmds
	}
	r.pipeline(ctx, cmds, redo, func(p redis.Pipeliner, i int) *redis.Cmd {
		return p.EvalSha(ctx, decideScript.Hash(), keys[i], args[i]...)
	})
	if missing := failed(cmds, redo, isNoScript); len(missing) > 0 {
		r.pipeline(ctx, cmds, missing, func(p redis.Pipeliner, i int) *redis.Cmd {
			return p.Eval(ctx, decideLua, keys[i], args[i]...)
		})
	}
	return cmds
}

// pipeline sends the calls of indexes in one pipeline, into cmds.
func (r *scriptRunner) pipeline(ctx context.Context, cmds []*redis.Cmd, indexes []int, call func(redis.Pipeliner, int) *redis.Cmd) {
	pipe := r.c.Pipeline()
	for _, i := range indexes {
		cmds[i] = call(pipe, i)
	}
	_, _ = pipe.Exec(ctx) // each command holds its own error
}

// failed returns the indexes whose command's error matches.
func failed(cmds []*redis.Cmd, indexes []int, match func(error) bool) []int {
	var out []int
	for _, i := range indexes {
		if match(cmds[i].Err()) {
			out = append(out, i)
		}
	}
	return out
}

// load loads the library (on every master of a Cluster) and reports
// whether it may be called now.
func (r *scriptRunner) load(ctx context.Context) bool {
	loadOn := func(ctx context.Context, c *redis.Client) error {
		return c.FunctionLoadReplace(ctx, decideLibrary).Err()
	}
	var err error
	if cc, ok := r.c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, loadOn)
	} else {
		err = r.c.FunctionLoadReplace(ctx, decideLibrary).Err()
	}
	if err == nil {
		return true
	}
	r.refused(err)
	return false
}

// prepare makes the server (every master of a Cluster) hold the library,
// or the script when it refuses functions, so that the next call runs
// at once: after a restart or a failover the server has neither.
func (r *scriptRunner) prepare(ctx context.Context) error {
	if r.mode.Load() == runFunction && r.load(ctx) {
		return nil
	}
	if cc, ok := r.c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return decideScript.Load(ctx, c).Err()
		})
	}
	return decideScript.Load(ctx, r.c).Err()
}

// unanswered reports whether the function call that ended with err has
// to be made as the script: the server refused functions, or the library
// could not be loaded.
func (r *scriptRunner) unanswered(err error) bool {
	return isFunctionMissing(err) || r.refused(err)
}

// refused reports whether err is the server refusing functions, and then
// turns the runner to the script.
func (r *scriptRunner) refused(err error) bool {
	msg, ok := serverError(err)
	msg = strings.ToLower(msg) // Redis 6 answers "ERR unknown command 'fcall'…"
	if ok && (strings.HasPrefix(msg, "noperm") || strings.HasPrefix(msg, "err unknown command") || strings.HasPrefix(msg, "err unknown subcommand")) {
		r.mode.Store(runScript)
		return true
	}
	return false
}

// isFunctionMissing reports whether err is a server's answer to FCALL of
// a function it does not hold.
func isFunctionMissing(err error) bool {
	msg, ok := serverError(err)
	return ok && strings.HasPrefix(msg, "ERR Function not found")
}

// isNoScript reports whether err is Redis' NOSCRIPT (the script is not
// cached on that server).
func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// serverError returns the text of err when it is the server's answer (not
// the network's or the client's).
func serverError(err error) (string, bool) {
	if err == nil {
		return "", false // before re, which escapes: a success allocates nothing
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return "", false
	}
	return re.Error(), true
}
