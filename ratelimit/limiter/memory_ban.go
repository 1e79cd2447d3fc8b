package limiter

// codeBan is the code of a memory store entry holding a key's ban state
// (under BanKey, as on Redis); never an algorithm's, never sent to Redis.
const codeBan = -1

// decideBanned decides p for the entry e of key (nil: no state) when the
// Ask counts its refusals (a ban, or Notify): refused outright while the
// key is banned, else decided, a refusal counted as an offence. The store
// must be locked.
func (s *MemoryStore) decideBanned(key string, e *memoryEntry, now int64, p params) decision {
	var bkey string // Notify alone reads the ban state only to count a refusal
	var b *memoryEntry
	if p.ban.on() {
		bkey = BanKey(key)
		b = s.lookup(bkey, codeBan, now)
		if b != nil && b.ok {
			if left := b.bans.left(now); left > 0 {
				return bannedDecision(left)
			}
		}
	}
	d := e.decide(now, p)
	if d.allowed {
		return d
	}
	if bkey == "" {
		bkey = BanKey(key)
		b = s.lookup(bkey, codeBan, now)
	}
	if b == nil {
		b = s.add(bkey, codeBan, now)
	}
	var st banState
	if b.ok {
		st = b.bans
	}
	st, dur, first := st.offend(now, p.windowUs, p.ban)
	b.bans, b.ok, b.p, b.expireAt = st, true, p, st.expireAt(p.windowUs, p.ban)
	d.first = first
	if dur > 0 {
		return d.withBan(dur)
	}
	return d
}

// banShare is usedShare for a ban state: 1 while banned, else the share
// of the refusals that set the next ban.
func (e *memoryEntry) banShare(now int64) float64 {
	if e.bans.left(now) > 0 {
		return 1
	}
	if now >= e.bans.since+e.p.windowUs {
		return 0
	}
	return float64(e.bans.count) / float64(e.p.ban.after)
}
