package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The files in testdata are go test -json -count=1 -short (Go 1.26, "Time"
// left out) of a throwaway module with one package per case; timeout.json
// ran with -timeout 1s.

func runReport(t *testing.T, input string) (string, bool) {
	t.Helper()
	var out strings.Builder
	ok, err := newReport(&out).run(strings.NewReader(input))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out.String(), ok
}

func readCase(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReport: each case prints plain go test's lines for it (want, in this
// order), nothing of a passing test (absent), and exits as go test did.
func TestReport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ok     bool
		want   []string
		absent []string
	}{
		{"pass", true, []string{
			"ok  \texample.com/t2j/pass\t0.057s\n" +
				"skipped (1):\n" +
				"  example.com/t2j/pass TestSub/b: p_test.go:8: b needs nothing\n" +
				"tests: 3 passed, 0 failed, 1 skipped\n",
		}, []string{"quiet unless it fails", "=== RUN", "--- PASS", "PASS\n"}},
		{"skip", true, []string{
			"ok  \texample.com/t2j/skip\t0.014s\n" +
				"skipped (2):\n" +
				"  example.com/t2j/skip TestLong: s_test.go:7: a long scenario: skipped under -short\n" +
				"  example.com/t2j/skip TestNoService: s_test.go:10: service unavailable: redis at 127.0.0.1:1\n" +
				"tests: 0 passed, 0 failed, 2 skipped\n",
		}, []string{"--- SKIP"}},
		{"fail", false, []string{
			"    f_test.go:7: context line\n    f_test.go:8: got 1, want 2\n--- FAIL: TestBad (0.00s)\n",
			"    f_test.go:12: broken subtest\n--- FAIL: TestParent/broken (0.00s)\n--- FAIL: TestParent (0.00s)\n",
			"FAIL\texample.com/t2j/fail\t0.031s\n",
			"FAIL\ntests: 2 passed, 3 failed, 0 skipped\n",
		}, []string{"not shown", "TestParent/ok", "=== RUN", "skipped ("}},
		{"panic", false, []string{
			"--- FAIL: TestBoom (0.00s)\npanic: assignment to entry in nil map",
			"/tmp/t2j/panic/p_test.go:8 +0x28\n",
			"FAIL\texample.com/t2j/panic\t0.022s\n",
			"tests: 1 passed, 1 failed, 0 skipped\n",
		}, []string{"TestFine"}},
		{"build", false, []string{
			"# example.com/t2j/build [example.com/t2j/build.test]\nbuild/b.go:3:23: cannot use",
			"FAIL\texample.com/t2j/build [build failed]\n",
			"?   \texample.com/t2j/notests\t[no test files]\n",
			"FAIL\ntests: 0 passed, 0 failed, 0 skipped\n",
		}, []string{"skipped ("}},
		// The timed-out test never ends: its output is printed and it
		// counts as failed.
		{"timeout", false, []string{
			"    t_test.go:9: waiting\npanic: test timed out after 1s\n",
			"/tmp/t2j/timeout/t_test.go:10 +0x49\n",
			"FAIL\texample.com/t2j/timeout\t1.020s\n",
			"tests: 0 passed, 1 failed, 0 skipped\n",
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := runReport(t, readCase(t, tc.name))
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v", ok, tc.ok)
			}
			rest := out
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks (or has out of order) %q:\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			for _, a := range tc.absent {
				if strings.Contains(out, a) {
					t.Errorf("output has %q:\n%s", a, out)
				}
			}
		})
	}
}

// TestReportAll: packages interleaved in one stream are each reported,
// and the skipped section and the counts cover them all.
func TestReportAll(t *testing.T) {
	var in strings.Builder
	for _, name := range []string{"pass", "fail", "skip", "panic", "build", "timeout"} {
		in.WriteString(readCase(t, name))
	}
	out, ok := runReport(t, in.String())
	if ok {
		t.Error("ok = true with failing packages")
	}
	if !strings.Contains(out, "skipped (3):\n") || !strings.HasSuffix(out, "FAIL\nskipped (3):\n"+
		"  example.com/t2j/pass TestSub/b: p_test.go:8: b needs nothing\n"+
		"  example.com/t2j/skip TestLong: s_test.go:7: a long scenario: skipped under -short\n"+
		"  example.com/t2j/skip TestNoService: s_test.go:10: service unavailable: redis at 127.0.0.1:1\n"+
		"tests: 6 passed, 5 failed, 3 skipped\n") {
		t.Errorf("end of output:\n%s", out)
	}
}

// TestReportCutOff: a stream that stops inside a package (go test killed)
// prints what that package had, fails, and passes other lines through.
func TestReportCutOff(t *testing.T) {
	in := "go: downloading example.com/x v1.0.0\n" +
		`{"Action":"start","Package":"example.com/p"}` + "\n" +
		`{"Action":"run","Package":"example.com/p","Test":"TestA"}` + "\n" +
		`{"Action":"output","Package":"example.com/p","Test":"TestA","Output":"=== RUN   TestA\n"}` + "\n" +
		`{"Action":"output","Package":"example.com/p","Test":"TestA","Output":"    a_test.go:3: started\n"}` + "\n"
	out, ok := runReport(t, in)
	want := "go: downloading example.com/x v1.0.0\n" +
		"# example.com/p: no result (the output stopped)\n" +
		"    a_test.go:3: started\n" +
		"FAIL\n" +
		"tests: 0 passed, 1 failed, 0 skipped\n"
	if ok || out != want {
		t.Errorf("got ok %v and\n%s\nwant ok false and\n%s", ok, out, want)
	}
}

// TestSkipMessage: a skip message over several lines, or none, is shown.
func TestSkipMessage(t *testing.T) {
	in := `{"Action":"run","Package":"example.com/p","Test":"TestA"}
{"Action":"output","Package":"example.com/p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"example.com/p","Test":"TestA","Output":"    a_test.go:9: no chromium:\n"}
{"Action":"output","Package":"example.com/p","Test":"TestA","Output":"        run scripts/browser.sh\n"}
{"Action":"output","Package":"example.com/p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"example.com/p","Test":"TestA"}
{"Action":"run","Package":"example.com/p","Test":"TestB"}
{"Action":"output","Package":"example.com/p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"example.com/p","Test":"TestB"}
{"Action":"output","Package":"example.com/p","Output":"ok  \texample.com/p\t0.01s\n"}
{"Action":"pass","Package":"example.com/p"}
`
	out, ok := runReport(t, in)
	want := "ok  \texample.com/p\t0.01s\n" +
		"skipped (2):\n" +
		"  example.com/p TestA: a_test.go:9: no chromium:\n" +
		"      run scripts/browser.sh\n" +
		"  example.com/p TestB: (no message)\n" +
		"tests: 0 passed, 0 failed, 2 skipped\n"
	if !ok || out != want {
		t.Errorf("got ok %v and\n%s\nwant ok true and\n%s", ok, out, want)
	}
}
