package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// FuzzClickRecord: a click's record reads back as written (id, time,
// code, the ClickEvent's JSON), and any bytes after the tag read as an
// event or an error, never a panic.
func FuzzClickRecord(f *testing.F) {
	f.Add("abc1234", int64(1796543043123456), []byte{clickRecordTag, 1, 2})
	f.Add("", int64(0), []byte{clickRecordTag})
	f.Fuzz(func(t *testing.T, code string, at int64, junk []byte) {
		c := clicks.Click{Code: code, At: time.UnixMicro(at), Class: clicks.ClassBrowser}
		rec := appendClickRecord(nil, c, newEventIDBytes())
		e, err := decodeClickRecord(7, rec, new(eventArena))
		want := clicks.NewClickEvent(c).AppendJSON(nil)
		if len(code) <= 0xffff && (err != nil || e.Code != code || link.ToMicros(e.At) != link.ToMicros(c.At) || string(e.Data) != string(want) ||
			len(e.ID) != 36 || !json.Valid(e.Data)) {
			t.Fatalf("read back %+v, %v", e, err)
		}
		_, _ = decodeClickRecord(7, append([]byte{clickRecordTag}, junk...), new(eventArena))
	})
}
