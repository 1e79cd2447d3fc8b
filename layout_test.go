package edgekit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bounds of the house (issue 14): no source file over maxFileLines, no
// function over maxFuncLines. Caddyfile parsers included: a block is a
// table of subdirectives (cfparse.Block), one short function each.
const (
	maxFileLines = 500
	maxFuncLines = 80
)

// oversized lists what is still over a bound while the renovation is under
// way; an entry that is back within bounds fails the test, so the list only
// shrinks.
var oversized = map[string]bool{}

func TestSourceSizes(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		switch filepath.Ext(path) {
		case ".go":
			checkGoFile(t, fset, path, seen)
		case ".lua":
			checkLines(t, path, seen)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range oversized {
		if !seen[name] {
			t.Errorf("%s is within bounds now: remove it from oversized", name)
		}
	}
}

func checkLines(t *testing.T, path string, seen map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxFileLines {
		report(t, seen, path, "%s has %d lines (at most %d)", path, n, maxFileLines)
	}
}

func checkGoFile(t *testing.T, fset *token.FileSet, path string, seen map[string]bool) {
	t.Helper()
	checkLines(t, path, seen)
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		if n > maxFuncLines {
			name := path + ":" + fn.Name.Name
			report(t, seen, name, "%s is %d lines (at most %d)", name, n, maxFuncLines)
		}
	}
}

func report(t *testing.T, seen map[string]bool, name, format string, args ...any) {
	t.Helper()
	key := filepath.ToSlash(name)
	seen[key] = true
	if !oversized[key] {
		t.Errorf(format, args...)
	}
}
