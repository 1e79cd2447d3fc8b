package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteOutputCut: a transfer cut midway exits 5 and leaves neither
// the file nor its temporary; a whole one is renamed into place.
func TestWriteOutputCut(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "links.ndjson")
	cut := io.MultiReader(strings.NewReader("{\"code\":\"a\"}\n"), errReader{io.ErrUnexpectedEOF})
	_, err := writeOutput(path, nil, cut)
	if exitCodeOf(err) != ExitServer || !strings.Contains(err.Error(), "was not written") {
		t.Errorf("cut transfer: %v (exit %d), want exit 5 saying the file was not written", err, exitCodeOf(err))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("after a cut transfer the directory holds %v", entries)
	}
	if _, err := writeOutput(path, nil, strings.NewReader("whole\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "whole\n" {
		t.Errorf("file = %q", b)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestCapReader: exactly the cap passes, one byte more fails.
func TestCapReader(t *testing.T) {
	for _, tc := range []struct {
		size int
		ok   bool
	}{{10, true}, {11, false}, {0, true}} {
		_, err := io.ReadAll(&capReader{r: strings.NewReader(strings.Repeat("x", tc.size)), left: 10})
		if (err == nil) != tc.ok {
			t.Errorf("%d bytes through a cap of 10: %v", tc.size, err)
		}
	}
}
