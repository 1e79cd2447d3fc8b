package shortener

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// storedSaltDays reads the days whose salt the sink's store holds, from
// the table or bucket itself.
func storedSaltDays(t *testing.T, s clicks.Sink) []time.Time {
	t.Helper()
	var days []time.Time
	switch s := s.(type) {
	case *store.PostgresClickSink:
		rows, err := s.Pool.Query(context.Background(), `SELECT day FROM shortener_visitor_salts ORDER BY day`)
		if err != nil {
			t.Fatal(err)
		}
		if days, err = pgx.CollectRows(rows, pgx.RowTo[time.Time]); err != nil {
			t.Fatal(err)
		}
	case *store.EmbeddedClickSink:
		err := s.Db.View(func(tx *bbolt.Tx) error {
			return tx.Bucket(store.BucketVisitorSalts).ForEach(func(k, _ []byte) error {
				days = append(days, time.Unix(int64(binary.BigEndian.Uint64(k)), 0).UTC())
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("%T keeps no salts", s)
	}
	for i, d := range days {
		days[i] = time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
	}
	return days
}

// countingSalter counts the calls reaching the store.
type countingSalter struct {
	clicks.VisitorSalter
	calls atomic.Int32
}

func (c *countingSalter) VisitorSalt(ctx context.Context, day time.Time) ([]byte, error) {
	c.calls.Add(1)
	return c.VisitorSalter.VisitorSalt(ctx, day)
}

// One salt per UTC day, the same for every caller racing to create it;
// the store keeps the current day's only (asking for a day deletes the
// ones before, and so does retention at the start of a day); the process
// caches one day's.
func TestVisitorSaltDaily(t *testing.T) {
	for name, open := range testClickSinks(t) {
		t.Run(name, func(t *testing.T) {
			sink := open(t)
			s := sink.(clicks.VisitorSalter)
			ctx := context.Background()
			day := func(d int) time.Time { return time.Date(2026, 6, d, 0, 0, 0, 0, time.UTC) }
			salts := make([][]byte, 64)
			var wg sync.WaitGroup
			for i := range salts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var err error
					if salts[i], err = s.VisitorSalt(ctx, day(10).Add(time.Duration(i)*time.Minute)); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			for i, salt := range salts {
				if len(salt) != clicks.VisitorSaltLen || !bytes.Equal(salt, salts[0]) {
					t.Fatalf("caller %d got salt %x, caller 0 %x: want one 32-byte salt for the day", i, salt, salts[0])
				}
			}
			if got := storedSaltDays(t, sink); len(got) != 1 || !got[0].Equal(day(10)) {
				t.Errorf("stored salt days = %v, want [2026-06-10]", got)
			}
			next, err := s.VisitorSalt(ctx, day(11).Add(time.Hour))
			if err != nil || bytes.Equal(next, salts[0]) {
				t.Fatalf("next day's salt = %x, %v; want a new one", next, err)
			}
			if got := storedSaltDays(t, sink); len(got) != 1 || !got[0].Equal(day(11)) {
				t.Errorf("after the next day's salt, stored days = %v, want [2026-06-11] alone", got)
			}
			pruneAll(t, sink, clicks.ClickCutoffs{Today: day(12)}, 100)
			if got := storedSaltDays(t, sink); len(got) != 0 {
				t.Errorf("after retention on 2026-06-12, stored days = %v, want none", got)
			}

			src := &countingSalter{VisitorSalter: s}
			c := &clicks.SaltCache{Src: src}
			a, err1 := c.Get(ctx, day(12).Add(time.Hour))
			b, err2 := c.Get(ctx, day(12).Add(23*time.Hour))
			if err1 != nil || err2 != nil || !bytes.Equal(a, b) || src.calls.Load() != 1 {
				t.Errorf("cached salt: %x %x (%v %v), %d store calls; want one salt from one call", a, b, err1, err2, src.calls.Load())
			}
			if n, _ := c.Get(ctx, day(13)); bytes.Equal(n, a) || c.Day != day(13).Unix() {
				t.Errorf("the cache kept day %d's salt, want 2026-06-13's alone", c.Day)
			}
		})
	}
}

// The visitor hash depends on salt, address and user agent, each field
// apart.
func TestVisitorHash(t *testing.T) {
	s1, s2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	base := clicks.VisitorHash(s1, "192.0.2.1", "UA")
	if clicks.VisitorHash(s1, "192.0.2.1", "UA") != base {
		t.Error("the hash is not deterministic")
	}
	for name, h := range map[string]uint64{
		"other salt": clicks.VisitorHash(s2, "192.0.2.1", "UA"), "other address": clicks.VisitorHash(s1, "192.0.2.2", "UA"),
		"other UA": clicks.VisitorHash(s1, "192.0.2.1", "UB"), "shifted split": clicks.VisitorHash(s1, "192.0.2.1U", "A"),
	} {
		if h == base {
			t.Errorf("%s: same hash %x", name, h)
		}
	}
}
