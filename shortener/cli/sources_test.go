package cli

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readAll reads every record of a source: the records read and the
// record errors by line.
func readAll(t *testing.T, src Source) ([]Record, map[int]string) {
	t.Helper()
	var recs []Record
	errs := map[int]string{}
	for {
		rec, err := src.Next()
		if err == io.EOF {
			return recs, errs
		}
		if re, ok := errors.AsType[*RecordError](err); ok {
			errs[re.Line] = re.Msg
			continue
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		recs = append(recs, rec)
	}
}

func openSample(t *testing.T, format, file string) Source {
	t.Helper()
	f, err := os.Open("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	src, err := Sources[format](f, SourceOptions{})
	if err != nil {
		t.Fatalf("open %s: %v", file, err)
	}
	return src
}

// brief is a record on one line, for comparisons.
func brief(r Record) string {
	s := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	tm := func(p *time.Time) string {
		if p == nil {
			return "<nil>"
		}
		return p.UTC().Format(time.RFC3339Nano)
	}
	c := "<nil>"
	if r.Clicks != nil {
		c = strconv.FormatInt(*r.Clicks, 10)
	}
	return strings.Join([]string{strconv.Itoa(r.Line), r.Code, r.LongURL, s(r.Title), strings.Join(r.Tags, ","), s(r.Notes),
		tm(r.CreatedAt), tm(r.ExpiresAt), tm(r.RevokedAt), c}, " | ")
}

func TestSourcesReadSamples(t *testing.T) {
	for _, tc := range []struct {
		format, file string
		want         []string
		refused      map[int]string
	}{
		{"yourls", "yourls.sql", []string{
			"21 | ozh | https://ozh.org/ | Ozh's blog; \"quoted\" |  | <nil> | 2024-01-15T10:30:00Z | <nil> | <nil> | 42",
			"21 | yourls | https://yourls.org/ | YOURLS: Your Own URL Shortener |  | <nil> | 2024-02-01T08:00:00Z | <nil> | <nil> | 7",
			"21 | no-title | https://example.com/a?b=c&d=e | <nil> |  | <nil> | 2024-03-03T03:03:03Z | <nil> | <nil> | 0",
			"22 | js | javascript:alert(1) | bad |  | <nil> | 2024-03-04T00:00:00Z | <nil> | <nil> | 1",
			"28 | multi | https://example.com/multi\nline | Two\r\nlines |  | <nil> | 2024-04-01T12:00:00Z | <nil> | <nil> | 3",
		}, nil},
		{"yourls", "yourls.csv", []string{
			"2 | ozh | https://ozh.org/ | Ozh's blog |  | <nil> | 2024-01-15T10:30:00Z | <nil> | <nil> | 42",
			"3 | yourls | https://yourls.org/ | YOURLS: Your Own URL Shortener |  | <nil> | 2024-02-01T08:00:00Z | <nil> | <nil> | 7",
			"4 | no-title | https://example.com/a?b=c&d=e | <nil> |  | <nil> | 2024-03-03T03:03:03Z | <nil> | <nil> | 0",
			"5 | js | javascript:alert(1) | bad |  | <nil> | 2024-03-04T00:00:00Z | <nil> | <nil> | 1",
		}, nil},
		{"shlink", "shlink.csv", []string{
			"2 | docs | https://shlink.io/documentation/ | Shlink docs | docs,reference | <nil> | 2024-01-15T09:30:00Z | <nil> | <nil> | 120",
			"3 | Ab3dE | https://example.com/spring?utm_source=mail | <nil> | spring-sale,mail | <nil> | 2024-02-01T08:00:00Z | <nil> | <nil> | 5",
			"4 | ftp1 | ftp://example.com/file | FTP |  | <nil> | 2024-03-03T03:03:03Z | <nil> | <nil> | 0",
		}, nil},
		{"bitly", "bitly.csv", []string{
			"2 | 3xYzAbc | https://example.com/launch | Launch post | launch,blog | <nil> | 2024-01-15T10:30:00Z | <nil> | <nil> | 1024",
			"2 | launch-2024 | https://example.com/launch | Launch post | launch,blog | <nil> | 2024-01-15T10:30:00Z | <nil> | <nil> | <nil>",
			"3 | 4kLmNop | https://example.com/pricing?plan=pro | <nil> |  | <nil> | 2024-02-01T08:00:00Z | <nil> | <nil> | 0",
		}, map[int]string{4: `bitlink: "https://bit.ly/" has no back-half, or more than one path segment`}},
		{"kutt", "kutt.json", []string{
			"1 | k1tt | https://github.com/thedevs-network/kutt | Kutt project |  | <nil> | 2024-01-15T10:30:00Z | <nil> | <nil> | 33",
			"2 | gone | https://example.com/banned | <nil> |  | <nil> | 2024-02-01T08:00:00Z | <nil> | 2024-02-10T09:00:00Z | 4",
		}, map[int]string{3: "password: the link is password-protected in Kutt, and this handler has no passwords: not imported"}},
		{"ndjson", "links.ndjson", []string{
			"1 | spring | https://example.com/spring-sale | Spring sale flyer | print,campaign:spring-2027 | Printed on 5,000 flyers.\nDo not change the destination. | 2026-12-02T13:56:40.204959Z | <nil> | <nil> | 3",
			"2 | launch | https://example.com/launch | <nil> | print | <nil> | 2026-12-02T13:56:40.398319Z | 2027-01-01T00:00:00Z | <nil> | 1",
			"4 | old-offer | https://example.com/old | =SUM(A1:A9) old offer |  | <nil> | 2026-12-02T13:56:40.568593Z | <nil> | 2026-12-02T13:56:41.349498Z | 0",
		}, nil},
		{"csv", "links.csv", []string{
			"2 | spring | https://example.com/spring-sale | Spring sale flyer | print,campaign:spring-2027 | Printed on 5,000 flyers.\nDo not change the destination. | 2026-12-02T13:56:40.204959Z | <nil> | <nil> | 3",
			"4 | launch | https://example.com/launch | <nil> | print | <nil> | 2026-12-02T13:56:40.398319Z | 2027-01-01T00:00:00Z | <nil> | 1",
			"5 | old-offer | https://example.com/old | =SUM(A1:A9) old offer |  | <nil> | 2026-12-02T13:56:40.568593Z | <nil> | 2026-12-02T13:56:41.349498Z | 0",
		}, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			recs, errs := readAll(t, openSample(t, tc.format, tc.file))
			if len(recs) != len(tc.want) {
				for _, r := range recs {
					t.Logf("%q", brief(r))
				}
				t.Fatalf("%d records, want %d (refused: %v)", len(recs), len(tc.want), errs)
			}
			for i, r := range recs {
				if got := brief(r); got != tc.want[i] {
					t.Errorf("record %d =\n%q\nwant\n%q", i, got, tc.want[i])
				}
			}
			if len(errs) != len(tc.refused) {
				t.Errorf("refused %v, want %v", errs, tc.refused)
			}
			for line, msg := range tc.refused {
				if errs[line] != msg {
					t.Errorf("line %d refused %q, want %q", line, errs[line], msg)
				}
			}
		})
	}
}
