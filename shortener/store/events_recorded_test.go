package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// TestRecordEvents: events recorded from outside (the rate limiter's)
// read back in order with their id, type, time and data, after a link's
// own event; events a store would misread (a link's or a click's type,
// data that is not JSON, no id) are refused and nothing of their batch
// is kept.
func TestRecordEvents(t *testing.T) {
	for name, s := range openEventStores(t, true) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rec := s.(link.EventRecorder)
			if err := s.Create(ctx, link.Link{Code: "before", LongURL: "https://example.com/"}); err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 12, 6, 10, 0, 0, 123456000, time.UTC)
			in := []link.Event{
				{ID: "evt_0123456789abcdef0123456789abcdef", Type: "ratelimit.exceeded", At: at, Data: []byte(`{"zone":"api","retry_after":3}`)},
				{ID: "evt_fedcba9876543210fedcba9876543210", Type: "ratelimit.ban_set", At: at.Add(time.Second), Data: []byte(`{"zone":"api","ban":60}`)},
			}
			for _, bad := range [][]link.Event{
				{in[0], {ID: "evt_1", Type: "link.created", At: at, Data: []byte(`{}`)}},
				{in[0], {ID: "evt_2", Type: "click", At: at, Data: []byte(`{}`)}},
				{in[0], {ID: "evt_3", Type: "ratelimit.exceeded", At: at, Data: []byte(`{"zone":`)}},
				{in[0], {ID: "", Type: "ratelimit.exceeded", At: at, Data: []byte(`{}`)}},
				{{ID: "evt_4", Type: "ratelimit.exceeded", At: at, Data: []byte(`"` + strings.Repeat("x", 20000) + `"`)}},
			} {
				if err := rec.RecordEvents(ctx, bad); err == nil {
					t.Errorf("recorded %+v", bad[len(bad)-1])
				}
			}
			if err := rec.RecordEvents(ctx, in); err != nil {
				t.Fatal(err)
			}
			got := readEventsEventually(t, s, 3)
			if len(got) != 3 || got[0].Code != "before" {
				t.Fatalf("read %+v, want the link's event and two recorded", got)
			}
			for i, e := range got[1:] {
				w := in[i]
				if e.ID != w.ID || e.Type != w.Type || !e.At.Equal(w.At) || e.Code != "" || !jsonEqual(e.Data, w.Data) {
					t.Errorf("read back %+v %s, want %+v %s", e, e.Data, w, w.Data)
				}
			}
		})
	}
}

// jsonEqual: a and b are the same JSON value (PostgreSQL's jsonb spaces
// and orders keys its own way).
func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
