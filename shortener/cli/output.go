package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeOutput copies r to stdout (path "-") or to the file path: written
// to a temporary file beside it and renamed at the end, so a transfer
// cut halfway never leaves a complete-looking file. A cut transfer is a
// server failure (exit 5).
func writeOutput(path string, stdout io.Writer, r io.Reader) (int64, error) {
	if path == "-" {
		n, err := io.Copy(stdout, r)
		return n, transferErr(err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return 0, usageErr("-o: %v", err)
	}
	n, err := io.Copy(tmp, r)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = usageErr("-o: %v", cerr)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return n, transferErr(fmt.Errorf("%w (%s was not written)", err, path))
	}
	return n, nil
}

// transferErr says that a transfer was cut (exit 5).
func transferErr(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*cmdError](err); ok {
		return err
	}
	return exitErr(ExitServer, "the transfer was cut: %v", err)
}
