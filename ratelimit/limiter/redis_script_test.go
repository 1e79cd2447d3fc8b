package limiter

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// The script's arithmetic on miniredis, whose TIME the test sets: the same
// traces as the memory store, and the same results.

// TestRedisScriptMatchesMemory drives the memory store and the script with
// the same random trace — every algorithm, several keys, several asks per
// decision, costs 0 to 3, odd limits, half the zones with a ban — and
// requires identical results.
func TestRedisScriptMatchesMemory(t *testing.T) {
	for seed := range uint64(3) {
		t.Run("seed"+strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			mem, lua := newMemoryClocked(t), newMiniredisClocked(t)
			type zone struct {
				name  string
				limit Limit
				ban   Ban
			}
			var zones []zone
			for i, alg := range allAlgorithms {
				for j := range 2 {
					l := Limit{
						Algorithm: alg,
						Events:    int64(1 + rng.IntN(12)),
						Window:    time.Duration(1+rng.IntN(3000)) * time.Millisecond,
						Burst:     int64(rng.IntN(6)),
					}
					z := zone{name: alg + strconv.Itoa(i*2+j), limit: l}
					if j == 1 {
						d := time.Duration(1+rng.IntN(400)) * time.Millisecond
						z.ban = Ban{Duration: d, After: int64(rng.IntN(3)), Max: d * time.Duration(1+rng.IntN(4))}
					}
					zones = append(zones, z)
				}
			}
			outcomes := map[bool]int{}
			bansSet := 0
			now := traceBase.Add(time.Duration(rng.IntN(1_000_000)) * time.Microsecond)
			for step := range 300 {
				now = now.Add(time.Duration(rng.ExpFloat64() * 30_000 * float64(time.Microsecond)))
				mem.set(now)
				lua.set(now)
				var asks []Ask
				for _, zi := range rng.Perm(len(zones))[:1+rng.IntN(3)] {
					z := zones[zi]
					asks = append(asks, Ask{
						Key:   "k:" + z.name + ":" + strconv.Itoa(rng.IntN(2)),
						Limit: z.limit,
						Cost:  int64(rng.IntN(4)),
						Ban:   z.ban,
					})
				}
				want, err := mem.store.Decide(context.Background(), asks)
				if err != nil {
					t.Fatal(err)
				}
				got, err := lua.store.Decide(context.Background(), asks)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for i := range asks {
					outcomes[want[i].Allowed]++
					if want[i].BanSet {
						bansSet++
					}
					if got[i] != want[i] {
						t.Fatalf("step %d ask %d %+v:\n script %+v\n memory %+v", step, i, asks[i], got[i], want[i])
					}
				}
			}
			if outcomes[true] < 60 || outcomes[false] < 60 {
				t.Errorf("trace decided %d allowed and %d refused asks: too one-sided to compare", outcomes[true], outcomes[false])
			}
			if bansSet < 5 {
				t.Errorf("trace set %d bans: too few to compare", bansSet)
			}
			t.Logf("%d allowed, %d refused, %d bans set", outcomes[true], outcomes[false], bansSet)
		})
	}
}

func TestRedisDecodeReply(t *testing.T) {
	bad := []any{
		nil,
		"OK",
		[]any{int64(1)},
		[]any{int64(1), int64(1), int64(2), int64(3), int64(4)},
		[]any{int64(1), int64(1), int64(2), int64(3), int64(4), "5"},
		// verdicts: 0-3, and 4 or 7 (a first refusal, or one setting a ban)
		[]any{int64(1), int64(5), int64(2), int64(3), int64(4), int64(5)},
		[]any{int64(1), int64(6), int64(2), int64(3), int64(4), int64(5)},
		[]any{int64(1), int64(8), int64(2), int64(3), int64(4), int64(5)},
	}
	for _, v := range bad {
		if _, _, err := decodeReply(v, 1); err == nil {
			t.Errorf("decodeReply(%#v) = nil error, want an error", v)
		}
	}
	res, now, err := decodeReply([]any{int64(1_800_000_000_000_000), int64(1), int64(-3), int64(0), int64(5), int64(7)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Remaining floored at 0; left keeps the debt (approximate zones).
	want := Result{Allowed: true, Remaining: 0, Reset: 5 * time.Microsecond, Delay: 7 * time.Microsecond, Now: time.UnixMicro(now), Left: -3}
	if res[0] != want {
		t.Errorf("decodeReply = %+v, want %+v", res[0], want)
	}
}

// TestRedisScriptBatchMatchesMemory: one script call deciding a batch of
// requests (as the coalescer sends them) decides each request as if it had
// its own call, in order: the memory store deciding the same requests one
// after another at the same instant gives identical results. Requests of
// a batch share keys, so later ones see what earlier ones charged (or,
// refused, did not charge), and the bans their refusals set.
func TestRedisScriptBatchMatchesMemory(t *testing.T) {
	for seed := range uint64(3) {
		t.Run("seed"+strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			mem, lua := newMemoryClocked(t), newMiniredisClocked(t)
			c := lua.store.(*RedisStore).c
			var limits []Limit
			var bans []Ban // every other limit has one
			for _, alg := range allAlgorithms {
				for j := range 2 {
					limits = append(limits, Limit{
						Algorithm: alg,
						Events:    int64(1 + rng.IntN(10)),
						Window:    time.Duration(1+rng.IntN(2000)) * time.Millisecond,
						Burst:     int64(rng.IntN(5)),
					})
					var b Ban
					if j == 1 {
						b = Ban{Duration: time.Duration(1+rng.IntN(300)) * time.Millisecond, After: int64(1 + rng.IntN(3))}
						b.Max = b.Duration * 3
					}
					bans = append(bans, b)
				}
			}
			outcomes := map[bool]int{}
			bansSet := 0
			now := traceBase
			for step := range 150 {
				now = now.Add(time.Duration(rng.ExpFloat64() * 60_000 * float64(time.Microsecond)))
				mem.set(now)
				lua.set(now)
				var calls []*scriptCall
				var reqs [][]Ask
				for range 1 + rng.IntN(8) {
					var asks []Ask
					for _, li := range rng.Perm(len(limits))[:1+rng.IntN(3)] {
						asks = append(asks, Ask{
							Key:   "b:" + strconv.Itoa(li) + ":" + strconv.Itoa(rng.IntN(2)),
							Limit: limits[li],
							Cost:  int64(rng.IntN(3)),
							Ban:   bans[li],
						})
					}
					ps := make([]params, len(asks))
					for i := range asks {
						p, err := paramsOf(asks[i])
						if err != nil {
							t.Fatal(err)
						}
						ps[i] = p
					}
					keys, args := scriptArgs(asks, ps)
					calls = append(calls, &scriptCall{ctx: context.Background(), keys: keys, args: args, done: make(chan struct{}, 1)})
					reqs = append(reqs, asks)
				}
				keys, args := joinCalls(calls)
				v, err := decideScript.Run(context.Background(), c, keys, args...).Result()
				deliver(calls, v, err)
				for r, asks := range reqs {
					want, err := mem.store.Decide(context.Background(), asks)
					if err != nil {
						t.Fatal(err)
					}
					<-calls[r].done
					if calls[r].err != nil {
						t.Fatalf("step %d request %d: %v", step, r, calls[r].err)
					}
					got, err := decodeResults(calls[r].now, calls[r].vals, len(asks))
					if err != nil {
						t.Fatal(err)
					}
					for i := range asks {
						outcomes[want[i].Allowed]++
						if want[i].BanSet {
							bansSet++
						}
						if got[i] != want[i] {
							t.Fatalf("step %d request %d of %d, ask %d %+v:\n script %+v\n memory %+v", step, r, len(reqs), i, asks[i], got[i], want[i])
						}
					}
				}
			}
			if outcomes[true] < 60 || outcomes[false] < 60 {
				t.Errorf("trace decided %d allowed and %d refused asks: too one-sided to compare", outcomes[true], outcomes[false])
			}
			if bansSet < 5 {
				t.Errorf("trace set %d bans: too few to compare", bansSet)
			}
			t.Logf("%d allowed, %d refused, %d bans set", outcomes[true], outcomes[false], bansSet)
		})
	}
}
