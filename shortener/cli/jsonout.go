package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"time"
)

// now is the clock statuses are judged by.
var now = time.Now

// compactJSON is b on one line (b is JSON the API sent).
func compactJSON(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
