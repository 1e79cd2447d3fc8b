package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

// FuzzStoredRecords: a message's state and an attempt read back as
// written; the JSON versions before wrote reads as it did; any bytes read
// as a record or an error, never a panic.
func FuzzStoredRecords(f *testing.F) {
	f.Add("msg_1", "ep_1", "click.batch", "pending", int64(1796543043123456), 100, 3, int64(-5), 2, int64(7), 204, []byte("ok"), "", []byte{1, 2})
	f.Add("", "", "", "", int64(0), 0, 0, int64(0), 0, int64(0), 0, []byte{}, "dial tcp: refused", []byte(`{"id":"x"}`))
	f.Fuzz(func(t *testing.T, id, ep, typ, state string, at int64, events, attempts int, next int64, series int, made int64,
		status int, body []byte, errText string, junk []byte) {
		m := embeddedMessage{ID: id, Endpoint: ep, Type: typ, At: at, Events: events, State: state, Attempts: attempts,
			NextAt: next, Series: series, MadeAt: made}
		if len(body) == 0 {
			body = nil
		}
		a := embeddedAttempt{At: at, Status: status, LatencyUS: next, Body: body, Error: errText}
		if got, err := decodeMessageRecord(appendMessageRecord(nil, m)); err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("message read back as %+v, %v; want %+v", got, err, m)
		}
		if got, err := decodeAttemptRecord(appendAttemptRecord(nil, a)); err != nil || !reflect.DeepEqual(got, a) {
			t.Fatalf("attempt read back as %+v, %v; want %+v", got, err, a)
		}
		if validUTF8(id, ep, typ, state, errText) { // what JSON keeps as it is
			v, _ := json.Marshal(m)
			if got, err := decodeMessageRecord(v); err != nil || !reflect.DeepEqual(got, m) {
				t.Fatalf("message in JSON read back as %+v, %v; want %+v", got, err, m)
			}
			v, _ = json.Marshal(a)
			if got, err := decodeAttemptRecord(v); err != nil || !reflect.DeepEqual(got, a) {
				t.Fatalf("attempt in JSON read back as %+v, %v; want %+v", got, err, a)
			}
		}
		_, _ = decodeMessageRecord(junk)
		_, _ = decodeAttemptRecord(junk)
		if _, err := decodeMessageRecord(appendMessageRecord(nil, m)[:1]); err == nil {
			t.Fatal("a message record cut short read without an error")
		}
	})
}

func validUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
