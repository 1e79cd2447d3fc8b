package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// importModeServer answers POST /links/batch in the import mode's shape,
// remembering only a count, so the test measures the client alone: a code
// starting with "skip-" is skipped, "conf-" a conflict with the long URL
// https://example.com/old, "bad-" refused; any other is created. A PATCH
// answers 200.
func importModeServer(t *testing.T, received *atomic.Int64) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			received.Add(1_000_000)
			w.Write([]byte(`{}`))
			return
		}
		var req struct {
			Mode  string            `json:"mode"`
			Links []json.RawMessage `json:"links"`
		}
		if r.URL.Path != "/api/links/batch" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Mode != "import" {
			http.Error(w, `{"error":"not an import batch"}`, http.StatusBadRequest)
			return
		}
		var out bytes.Buffer
		out.WriteString(`{"mode":"import","results":[`)
		for i, raw := range req.Links {
			var it struct{ Code string }
			_ = json.Unmarshal(raw, &it)
			if i > 0 {
				out.WriteByte(',')
			}
			fmt.Fprintf(&out, `{"code":%q,%s}`, it.Code, importModeResult(it.Code))
		}
		out.WriteString("]}")
		received.Add(int64(len(req.Links)))
		w.Header().Set("Content-Type", "application/json")
		w.Write(out.Bytes())
	}))
}

// importModeResult is the test server's answer for a code.
func importModeResult(code string) string {
	switch {
	case strings.HasPrefix(code, "skip-"):
		return `"result":"skipped","existing":{"long_url":"https://example.com/same"}`
	case strings.HasPrefix(code, "conf-"):
		return `"result":"conflict","error":"long_url differs","existing":{"long_url":"https://example.com/old"}`
	case strings.HasPrefix(code, "bad-"):
		return `"result":"refused","field":"long_url","error":"long_url scheme 'ftp' is not allowed"`
	}
	return `"result":"created"`
}

// TestImportModeResults: each import-mode result becomes its outcome;
// --overwrite PATCHes a conflict with another destination.
func TestImportModeResults(t *testing.T) {
	var received atomic.Int64
	srv := importModeServer(t, &received)
	defer srv.Close()
	c, _ := newClient(srv.URL+"/api", "k", time.Minute)
	file := `{"code":"new-1","long_url":"https://example.com/n"}
{"code":"skip-1","long_url":"https://example.com/same"}
{"code":"conf-1","long_url":"https://example.com/new"}
{"code":"bad-1","long_url":"ftp://example.com/"}
`
	for _, overwrite := range []bool{false, true} {
		var out bytes.Buffer
		src, _ := newNDJSONSource(strings.NewReader(file), SourceOptions{})
		im := &importer{c: c, batchSize: 500, overwrite: overwrite, out: &out, errw: io.Discard, dropped: map[string]bool{}}
		err := im.run(context.Background(), src)
		want := "line 3: conf-1 conflict: long_url differs\nline 4: bad-1 refused: long_url scheme 'ftp' is not allowed\n" +
			"4 records: created 1, skipped 1, conflicts 1, updated 0, refused 1\n"
		if overwrite {
			want = "line 3: conf-1 updated: long_url was https://example.com/old (edited through PATCH, history kept)\n" +
				"line 4: bad-1 refused: long_url scheme 'ftp' is not allowed\n4 records: created 1, skipped 1, conflicts 0, updated 1, refused 1\n"
		}
		if out.String() != want || exitCodeOf(err) != ExitConflict {
			t.Errorf("overwrite %v: exit %d, printed\n%s\nwant\n%s", overwrite, exitCodeOf(err), out.String(), want)
		}
	}
	if received.Load() != 8+1_000_000 {
		t.Errorf("the server received %d (links + 1e6 per PATCH), want one PATCH", received.Load())
	}
}

// generatedNDJSON writes n export lines to a pipe as they are read.
func generatedNDJSON(n int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range n {
			fmt.Fprintf(pw, `{"code":"m%07d","long_url":"https://example.com/%d/%s","created_at":%q,"title":"Link %d","tags":["bulk"],"clicks":%d}`+"\n",
				i, i, strings.Repeat("x", 64), created.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i, i%1000)
		}
		pw.Close()
	}()
	return pr
}

// TestImportConstantMemory streams 20,000 then 200,000 NDJSON links
// through the import mode: the client's peak heap is the same for both
// (one batch), whatever the number of links. The rate is the client's
// side only (the server answers from memory).
func TestImportConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("220,000 links: skipped under -short")
	}
	small := importPeakHeap(t, 20_000)
	large := importPeakHeap(t, 200_000)
	if large > small+8<<20 || large > 48<<20 {
		t.Errorf("peak heap %.1f MiB for 200,000 links, %.1f MiB for 20,000: the import does not stream",
			float64(large)/(1<<20), float64(small)/(1<<20))
	}
}

// importPeakHeap imports n generated links and answers the peak heap in
// use, sampled every 100 ms after a GC.
func importPeakHeap(t *testing.T, n int) uint64 {
	var received atomic.Int64
	srv := importModeServer(t, &received)
	defer srv.Close()
	c, err := newClient(srv.URL+"/api", "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var out, progressOut bytes.Buffer
	src, _ := newNDJSONSource(generatedNDJSON(n), SourceOptions{})
	im := &importer{c: c, batchSize: 500, out: &out, errw: io.Discard, dropped: map[string]bool{}}
	im.prog = newProgress(&progressOut, &countingReader{}, 0)
	var peak uint64
	sample := func() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				sample()
			}
		}
	}()
	start := time.Now()
	err = im.run(context.Background(), src)
	elapsed := time.Since(start)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if received.Load() != int64(n) || im.sum.Created != n || im.mode != modeImport {
		t.Fatalf("server received %d, summary %+v, mode %q; want %d created in import mode", received.Load(), im.sum, im.mode, n)
	}
	t.Logf("%d links in %v (%.0f/s), peak heap in use %.1f MiB", n, elapsed, float64(n)/elapsed.Seconds(), float64(peak)/(1<<20))
	if !strings.Contains(progressOut.String(), "records") {
		t.Errorf("progress printed %q", progressOut.String())
	}
	return peak
}
