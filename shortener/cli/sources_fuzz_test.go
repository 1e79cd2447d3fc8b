package cli

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzRecord builds a record from fuzzed parts as the API could hold it:
// empty strings are none, tags are split on spaces.
func fuzzRecord(code, long, title, tags, notes string, created int64, clicks int64, revoked bool) Record {
	rec := Record{Line: 1, Code: code, LongURL: long, Title: strPtr(title), Notes: strPtr(notes)}
	if tags != "" {
		rec.Tags = strings.Fields(tags)
	}
	ct := time.Unix(0, created).UTC()
	rec.CreatedAt = &ct
	if revoked {
		rt := ct.Add(time.Hour)
		rec.RevokedAt = &rt
	}
	if clicks >= 0 {
		rec.Clicks = &clicks
	}
	return rec
}

// onlyRecord reads the one record of a source.
func onlyRecord(t *testing.T, src Source) Record {
	t.Helper()
	rec, err := src.Next()
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	if _, err := src.Next(); err != io.EOF {
		t.Fatalf("second Next = %v, want io.EOF", err)
	}
	return rec
}

var roundTripSeeds = []struct {
	code, long, title, tags, notes string
	created, clicks                int64
	revoked                        bool
}{
	{"spring", "https://example.com/spring-sale", "Spring sale flyer", "print campaign:spring-2027", "Printed.\nTwice.", 1796219800204959000, 3, false},
	{"-abc", "https://example.com/=x", "=SUM(A1:A9)", "", "", 0, -1, true},
	{"'q", "https://example.com/\"quoted\",comma", "'already", "a", "@at\ttab", 1, 0, false},
	{"日本", "https://例え.jp/パス", "タイトル", "x:y", "", -1, 1 << 40, false},
}

// FuzzNDJSONRoundTrip: a record written as an NDJSON export line reads
// back equal.
func FuzzNDJSONRoundTrip(f *testing.F) {
	for _, s := range roundTripSeeds {
		f.Add(s.code, s.long, s.title, s.tags, s.notes, s.created, s.clicks, s.revoked)
	}
	f.Fuzz(func(t *testing.T, code, long, title, tags, notes string, created, clicks int64, revoked bool) {
		if !utf8.ValidString(code + long + title + tags + notes) {
			t.Skip("JSON carries UTF-8 only (the API refuses anything else)")
		}
		want := fuzzRecord(code, long, title, tags, notes, created, clicks, revoked)
		line, err := MarshalNDJSON(&want)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := newNDJSONSource(bytes.NewReader(append(line, '\n')), SourceOptions{})
		if got := onlyRecord(t, src); !reflect.DeepEqual(got, want) {
			t.Fatalf("read back\n%+v\nwant\n%+v\nfrom %s", got, want, line)
		}
	})
}

// FuzzCSVRoundTrip: a record written as a row of the CSV export (cells
// neutralised against formulas) reads back equal. A carriage return is
// left out: encoding/csv reads CRLF inside a quoted cell as LF
// (docs/cli.md says so; NDJSON keeps it).
func FuzzCSVRoundTrip(f *testing.F) {
	for _, s := range roundTripSeeds {
		f.Add(s.code, s.long, s.title, s.tags, s.notes, s.created, s.clicks, s.revoked)
	}
	f.Fuzz(func(t *testing.T, code, long, title, tags, notes string, created, clicks int64, revoked bool) {
		all := code + long + title + tags + notes
		if !utf8.ValidString(all) || strings.ContainsRune(all, '\r') || code == "" || long == "" {
			t.Skip("UTF-8 without CR, with a code and a long URL")
		}
		want := fuzzRecord(code, long, title, tags, notes, created, clicks, revoked)
		want.Line = 2
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		_ = w.Write(exportColumns)
		if err := WriteCSVRecord(w, &want, "https://sho.rt/x"); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		src, err := newCSVSource(&buf, SourceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := onlyRecord(t, src); !reflect.DeepEqual(got, want) {
			t.Fatalf("read back\n%+v\nwant\n%+v\nfrom %q", got, want, buf.String())
		}
	})
}

// drain reads a source to its end: it must end (no more records than
// bytes), never panic, and number records from 1 up.
func drain(t *testing.T, src Source, size int) {
	for n := 0; ; n++ {
		if n > size+1 {
			t.Fatalf("more than %d records from %d bytes", n, size)
		}
		rec, err := src.Next()
		if err == io.EOF {
			return
		}
		if err != nil && !errors.As(err, new(*RecordError)) {
			return // the file ends the import: fine, as long as it says so
		}
		if rec.Line < 0 {
			t.Fatalf("record at line %d", rec.Line)
		}
	}
}

// FuzzSources: any bytes, read by every source, end in records, record
// errors or one error, never a panic or a loop.
func FuzzSources(f *testing.F) {
	for _, s := range []string{
		"keyword,url,title,timestamp,ip,clicks\nozh,https://ozh.org/,Ozh,2024-01-15 10:30:00,192.0.2.1,42\n",
		"INSERT INTO `yourls_url` VALUES ('ozh','https://ozh.org/','O\\'zh','2024-01-15 10:30:00','1.2.3.4',42),('a','b',NULL,'0000-00-00 00:00:00','',0);",
		"-- x\n/* y */ INSERT INTO yourls_url (keyword,url) VALUES ('k','u');",
		"INSERT INTO `yourls_url` VALUES ('unterminated",
		"createdAt,domain,shortCode,shortUrl,longUrl,title,tags,visits\n2024-01-15T10:30:00+01:00,s.test,docs,https://s.test/docs,https://shlink.io/,Docs,a|b,120\n",
		"Bitlink,Long URL,Title,Date Created,Tags,Custom Bitlinks,Total Engagements\nbit.ly/3xY,https://e.com/,T,2024-01-15T10:30:00+0000,a,bit.ly/c,1,024\n",
		`{"data":[{"address":"k","target":"https://e.com/","created_at":"2024-01-15T10:30:00Z","password":false,"visit_count":1}],"total":1}`,
		`[{"address":"k","target":"u"}]{"data":[]}`,
		`{"data":[{"address":1}]}`,
		"{\"code\":\"a\",\"long_url\":\"u\"}\n\nnot json\n",
		"code,short_url,long_url\n'-x,s,u\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, open := range Sources {
			src, err := open(bytes.NewReader(data), SourceOptions{Table: "yourls_url"})
			if err != nil {
				continue
			}
			t.Run(name, func(t *testing.T) { drain(t, src, len(data)) })
		}
	})
}

// FuzzYOURLSSQLValues: values written as a mysqldump INSERT (escaped as
// mysqldump escapes them) read back as they were.
func FuzzYOURLSSQLValues(f *testing.F) {
	f.Add("ozh", "https://ozh.org/", "Ozh's \"blog\"\n\\", uint32(42))
	f.Add("a_b", "https://e.com/?q=%_", "\x00\x1a\r\t", uint32(0))
	f.Fuzz(func(t *testing.T, keyword, long, title string, clicks uint32) {
		esc := strings.NewReplacer("\\", "\\\\", "'", "\\'", "\"", "\\\"", "\x00", "\\0", "\n", "\\n", "\r", "\\r", "\x1a", "\\Z")
		dump := "INSERT INTO `yourls_url` VALUES ('" + esc.Replace(keyword) + "','" + esc.Replace(long) + "','" +
			esc.Replace(title) + "','2024-01-15 10:30:00','192.0.2.1'," + strconv.FormatUint(uint64(clicks), 10) + ");\n"
		src, err := newYOURLSSource(strings.NewReader(dump), SourceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := onlyRecord(t, src)
		n := int64(clicks)
		if got.Code != keyword || got.LongURL != long || !reflect.DeepEqual(got.Title, strPtr(title)) || *got.Clicks != n {
			t.Fatalf("read %+v from %q", got, dump)
		}
	})
}
