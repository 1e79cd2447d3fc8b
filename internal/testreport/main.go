// Command testreport reads go test -json on its standard input and prints
// what plain go test prints (a line per package; all the output of each
// failing test), then every test that skipped with its skip message, then
// "tests: N passed, N failed, N skipped". It exits 1 when a package or a test
// failed. make test (scripts/test.sh) pipes its go test -race step through it:
//
//	go test -json ./... | go run ./internal/testreport
package main

import (
	"fmt"
	"os"
)

func main() {
	ok, err := newReport(os.Stdout).run(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}
