package limiter

import (
	"context"
	"testing"
	"time"
)

// The ban checks of the conformance suite (see conformanceChecks).

// testBanEscalation: a key refused twice within its window is banned 10s,
// its quota untouched; the next ban doubles (20s), the one after stops at
// ban_max (25s); ban_max after a ban ends, the key starts over at 10s.
func testBanEscalation(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	a := Ask{Key: cs.prefix + "ban:escalation", Limit: Limit{Algorithm: FixedWindow, Events: 2, Window: time.Second}, Cost: 1,
		Ban: Ban{Duration: 10 * time.Second, After: 2, Max: 25 * time.Second}}
	at := traceBase
	offend := func(want time.Duration) {
		t.Helper()
		cs.set(at)
		if got := burst(t, cs.store, a, 2); got != 2 {
			t.Fatalf("%s at +%s: %d of 2 allowed, want 2 (quota untouched by the ban)", cs.name, at.Sub(traceBase), got)
		}
		if r := ask1(t, cs.store, a); r.Allowed || r.Banned {
			t.Fatalf("first refusal %+v, want refused, not banned", r)
		}
		r := ask1(t, cs.store, a)
		if !r.Banned || !r.BanSet || r.RetryAfter != want {
			t.Fatalf("%s at +%s: second refusal %+v, want a ban of %s set", cs.name, at.Sub(traceBase), r, want)
		}
		cs.set(at.Add(want - time.Millisecond))
		if r := ask1(t, cs.store, a); !r.Banned || r.BanSet || r.RetryAfter != time.Millisecond {
			t.Fatalf("1ms before the ban ends: %+v, want banned, 1ms left", r)
		}
		at = at.Add(want)
	}
	offend(10 * time.Second)
	offend(20 * time.Second)
	offend(25 * time.Second)
	offend(25 * time.Second)
	at = at.Add(25*time.Second + time.Millisecond) // ban_max after the last ban (Redis: PX slack of 1ms): forgotten
	offend(10 * time.Second)
}

// testBanRefusalsOnly: allowed asks and asks without a ban never count;
// the ban refuses every ask of the key, alone or beside another zone's,
// and charges nothing in the other zone.
func testBanRefusalsOnly(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	ban := Ban{Duration: time.Hour, After: 2}
	a := Ask{Key: cs.prefix + "ban:{k}:a", Limit: Limit{Algorithm: TokenBucket, Events: 1, Window: time.Hour}, Cost: 1, Ban: ban}
	other := Ask{Key: cs.prefix + "ban:{k}:b", Limit: Limit{Algorithm: TokenBucket, Events: 5, Window: time.Hour}, Cost: 1}
	if !ask1(t, cs.store, a).Allowed {
		t.Fatal("first ask refused")
	}
	plain := a
	plain.Ban = Ban{}
	if r := ask1(t, cs.store, plain); r.Allowed || r.Banned {
		t.Fatalf("refusal without a ban: %+v", r)
	}
	if r := ask1(t, cs.store, a); r.Banned {
		t.Fatalf("first counted refusal banned: %+v (a refusal without a ban counted)", r)
	}
	res, err := cs.store.Decide(context.Background(), []Ask{other, a})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Allowed != true || res[1].Allowed || !res[1].BanSet {
		t.Fatalf("results %+v, want other passing, a refused setting the ban", res)
	}
	if r := ask1(t, cs.store, a); !r.Banned || r.RetryAfter <= 59*time.Minute || r.RetryAfter > time.Hour {
		t.Fatalf("during the ban: %+v, want banned for about 1h", r)
	}
	if r := ask1(t, cs.store, Ask{Key: other.Key, Limit: other.Limit}); r.Remaining != 5 {
		t.Errorf("other zone: %d left, want 5 (nothing charged beside a refusal)", r.Remaining)
	}
}

// testBanListLift: a ban in force is listed (key, remainder, level) and
// lifted; a ban in another zone is not listed.
func testBanListLift(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	ctx := context.Background()
	banner := cs.store.(Banner)
	ban := Ban{Duration: time.Hour, After: 1}
	l := Limit{Algorithm: FixedWindow, Events: 1, Window: time.Hour}
	keys := []string{cs.prefix + "p:z:0123", cs.prefix + "p:z:{t}0456", cs.prefix + "p:other:0789"}
	t.Cleanup(func() { // ban keys of untagged keys lie outside the test prefix
		for _, k := range keys {
			_ = banner.LiftBan(context.Background(), k)
		}
	})
	for _, k := range keys {
		ask1(t, cs.store, Ask{Key: k, Limit: l, Cost: 1, Ban: ban})
		if r := ask1(t, cs.store, Ask{Key: k, Limit: l, Cost: 1, Ban: ban}); !r.BanSet {
			t.Fatalf("%s: %+v, want a ban set", k, r)
		}
	}
	bans, err := banner.Bans(ctx, cs.prefix+"p", "z", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(bans) != 2 {
		t.Fatalf("listed %+v, want the 2 bans of zone z", bans)
	}
	for _, b := range bans {
		if (b.Key != keys[0] && b.Key != keys[1]) || b.Level != 1 || b.Left <= 59*time.Minute || b.Left > time.Hour {
			t.Errorf("listed %+v", b)
		}
	}
	if err := banner.LiftBan(ctx, keys[1]); err != nil {
		t.Fatal(err)
	}
	more := Limit{Algorithm: FixedWindow, Events: 5, Window: time.Hour} // room left: no refusal, no new ban
	if r := ask1(t, cs.store, Ask{Key: keys[1], Limit: more, Ban: ban}); !r.Allowed {
		t.Errorf("after the lift: %+v, want allowed", r)
	}
	if bans, _ := banner.Bans(ctx, cs.prefix+"p", "z", 10); len(bans) != 1 || bans[0].Key != keys[0] {
		t.Errorf("after the lift: listed %+v, want only %s", bans, keys[0])
	}
}
