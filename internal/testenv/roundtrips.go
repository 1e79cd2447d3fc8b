package testenv

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// RoundTrips is a go-redis hook counting script round trips (one command
// alone or one pipeline; not the connection set-up) and running Before,
// once, ahead of the first of the kind it is set for.
type RoundTrips struct {
	N          atomic.Int64 // round trips so far
	OnPipeline bool         // run Before ahead of the first pipeline (else the first command)
	Before     func()
	once       sync.Once
}

func (h *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !IsScriptCmd(cmd) {
			return next(ctx, cmd)
		}
		h.N.Add(1)
		if !h.OnPipeline && h.Before != nil {
			h.once.Do(h.Before)
		}
		return next(ctx, cmd)
	}
}

func (h *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || !IsScriptCmd(cmds[0]) {
			return next(ctx, cmds)
		}
		h.N.Add(1)
		if h.OnPipeline && h.Before != nil {
			h.once.Do(h.Before)
		}
		return next(ctx, cmds)
	}
}

// IsScriptCmd reports whether cmd runs Lua (FCALL, EVALSHA or EVAL).
func IsScriptCmd(cmd redis.Cmder) bool {
	return cmd.Name() == "evalsha" || cmd.Name() == "eval" || cmd.Name() == "fcall"
}
