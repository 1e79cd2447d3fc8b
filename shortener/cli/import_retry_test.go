package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestImportRetries503: a batch the server answers 503 ("nothing was
// changed") is sent again and the import goes on; after the last resend
// the 503 ends the import with exit 5; another error is not resent.
func TestImportRetries503(t *testing.T) {
	defer func(w []time.Duration) { importRetryWaits = w }(importRetryWaits)
	importRetryWaits = []time.Duration{time.Millisecond, time.Millisecond}
	var received atomic.Int64
	ok := importModeServer(t, &received)
	defer ok.Close()
	for _, tc := range []struct {
		name     string
		status   int
		failures int64
		posts    int64
		exit     int
	}{
		{"two 503s, then the batch", http.StatusServiceUnavailable, 2, 3, 0},
		{"503s past the last resend", http.StatusServiceUnavailable, 9, 3, ExitServer},
		{"a 500 is not resent", http.StatusInternalServerError, 1, 1, ExitServer},
	} {
		var posts atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if posts.Add(1) <= tc.failures {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				w.Write([]byte(`{"error":"link store unavailable, nothing was changed"}`))
				return
			}
			ok.Config.Handler.ServeHTTP(w, r)
		}))
		c, _ := newClient(srv.URL+"/api", "k", time.Minute)
		src, _ := newNDJSONSource(strings.NewReader(`{"code":"new-1","long_url":"https://example.com/n"}`+"\n"), SourceOptions{})
		var out, errw bytes.Buffer
		im := &importer{c: c, batchSize: 500, out: &out, errw: &errw, dropped: map[string]bool{}}
		err := im.run(context.Background(), src)
		srv.Close()
		if exitCodeOf(err) != tc.exit || posts.Load() != tc.posts {
			t.Errorf("%s: exit %d after %d posts (%v), want exit %d after %d", tc.name, exitCodeOf(err), posts.Load(), err, tc.exit, tc.posts)
		}
		if tc.exit == 0 && (!strings.Contains(out.String(), "created 1") || strings.Count(errw.String(), "sending the batch again") != 2) {
			t.Errorf("%s: printed %q, noted %q", tc.name, out.String(), errw.String())
		}
	}
}
