package webhook

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzBody: a message's body is what json.Marshal makes of {"type",
// "timestamp", "data"} for compact JSON data, and data that is not JSON
// is refused.
func FuzzBody(f *testing.F) {
	f.Add("a string", int64(1796543043123456789))
	f.Add("\u2028<&>\x00", int64(-1))
	f.Fuzz(func(t *testing.T, s string, at int64) {
		ts := time.Unix(0, at)
		data, _ := json.Marshal(map[string]string{"code": s})
		want, err := json.Marshal(struct {
			Type      string          `json:"type"`
			Timestamp time.Time       `json:"timestamp"`
			Data      json.RawMessage `json:"data"`
		}{TypeClick, ts.UTC(), data})
		if err != nil {
			return // a time json.Marshal refuses (a year past 9999)
		}
		got, err := Body(Rendered{Type: TypeClick, At: ts, Data: data})
		if err != nil || string(got) != string(want) {
			t.Fatalf("Body\n%s %v\njson.Marshal\n%s", got, err, want)
		}
		if _, err := Body(Rendered{Type: TypeClick, At: ts, Data: []byte(s)}); err == nil && !json.Valid([]byte(s)) {
			t.Fatalf("data %q that is not JSON made a body", s)
		}
	})
}
