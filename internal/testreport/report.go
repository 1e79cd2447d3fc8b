package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// event is one line of go test -json (cmd/test2json); ImportPath and the
// build actions are the compiler's output, before any test runs.
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// line is one line of a package's output and the test it belongs to ("" for
// the package itself).
type line struct{ test, text string }

// pkgRun is what is known of a package whose tests have not ended.
type pkgRun struct {
	lines []line
	ended map[string]string // test → pass, fail or skip
}

// skipped is a test that skipped and its skip message, one entry a line.
type skipped struct {
	pkg, test string
	why       []string
}

// report turns go test -json into what plain go test prints, package by
// package as each ends, then every skipped test and why, then the counts.
type report struct {
	w      io.Writer
	pkgs   map[string]*pkgRun
	order  []string // packages in the order they started
	skips  []skipped
	counts map[string]int // pass, fail, skip: tests and subtests
	failed bool           // a package failed (tests, build or setup)
}

func newReport(w io.Writer) *report {
	return &report{w: w, pkgs: map[string]*pkgRun{}, counts: map[string]int{}}
}

// run reads events from r until EOF and reports; it returns whether every
// package passed.
func (rp *report) run(r io.Reader) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024) // a test may log a long line
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Action == "" { // passed on as it was
			fmt.Fprintln(rp.w, sc.Text())
			continue
		}
		rp.event(ev)
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("reading go test -json: %w", err)
	}
	for _, name := range rp.order { // cut off: go test was killed or crashed
		if p, ok := rp.pkgs[name]; ok {
			fmt.Fprintf(rp.w, "# %s: no result (the output stopped)\n", name)
			rp.endPackage(name, p, "fail")
		}
	}
	rp.summary()
	return !rp.failed && rp.counts["fail"] == 0, nil
}

func (rp *report) event(ev event) {
	switch ev.Action {
	case "build-output": // what go test prints to stderr as it compiles
		fmt.Fprint(rp.w, ev.Output)
		return
	case "build-fail":
		rp.failed = true
		return
	}
	p := rp.pkgs[ev.Package]
	if p == nil {
		p = &pkgRun{ended: map[string]string{}}
		rp.pkgs[ev.Package] = p
		rp.order = append(rp.order, ev.Package)
	}
	switch ev.Action {
	case "output":
		p.lines = append(p.lines, line{ev.Test, ev.Output})
	case "pass", "fail", "skip":
		if ev.Test == "" {
			rp.endPackage(ev.Package, p, ev.Action)
			return
		}
		p.ended[ev.Test] = ev.Action
		rp.counts[ev.Action]++
		if ev.Action == "skip" {
			rp.skips = append(rp.skips, skipped{ev.Package, ev.Test, p.skipMessage(ev.Test)})
		}
	}
}

// endPackage prints a package's result as plain go test does: its summary
// line when it passed; when it failed, its own output and all the output of
// each test that failed or never ended (a panic, a timeout).
func (rp *report) endPackage(name string, p *pkgRun, action string) {
	delete(rp.pkgs, name)
	if action == "fail" {
		rp.failed = true
	}
	for _, l := range p.lines {
		switch {
		case action != "fail":
			if l.test == "" && (strings.HasPrefix(l.text, "ok  ") || strings.HasPrefix(l.text, "?   ")) {
				fmt.Fprint(rp.w, l.text)
			}
		case l.test == "" || p.ended[l.test] == "fail" || p.ended[l.test] == "":
			if !framing(l.text) {
				fmt.Fprint(rp.w, l.text)
			}
		}
	}
	for _, l := range p.lines { // a test still running when its package failed
		if l.test != "" && p.ended[l.test] == "" {
			p.ended[l.test] = "fail"
			rp.counts["fail"]++
		}
	}
}

// framing reports whether text is test2json's progress framing, which plain
// go test (not verbose) does not print.
func framing(text string) bool {
	for _, f := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(text, f) {
			return true
		}
	}
	return false
}

// skipMessage is what test logged before it skipped: t.Skip's message, with
// whatever it had logged before.
func (p *pkgRun) skipMessage(test string) []string {
	var why []string
	for _, l := range p.lines {
		text := strings.TrimRight(l.text, "\n")
		if l.test != test || framing(text) || strings.HasPrefix(strings.TrimSpace(text), "--- SKIP: ") || strings.TrimSpace(text) == "" {
			continue
		}
		why = append(why, strings.TrimSpace(text))
	}
	return why
}

// summary prints FAIL when anything failed (as go test does), every skipped
// test and why, and the counts in a line of their own.
func (rp *report) summary() {
	if rp.failed || rp.counts["fail"] > 0 {
		fmt.Fprintln(rp.w, "FAIL")
	}
	if len(rp.skips) > 0 {
		fmt.Fprintf(rp.w, "skipped (%d):\n", len(rp.skips))
		for _, s := range rp.skips {
			why := []string{"(no message)"}
			if len(s.why) > 0 {
				why = s.why
			}
			fmt.Fprintf(rp.w, "  %s %s: %s\n", s.pkg, s.test, why[0])
			for _, w := range why[1:] {
				fmt.Fprintf(rp.w, "      %s\n", w)
			}
		}
	}
	fmt.Fprintf(rp.w, "tests: %d passed, %d failed, %d skipped\n", rp.counts["pass"], rp.counts["fail"], rp.counts["skip"])
}
