package edgekit

import (
	"bufio"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocsLinks checks every Markdown file of the repository (README.md,
// xcaddy.md, docs/*.md...): each relative link [text](target) outside code
// must name a file or directory that exists, and an #anchor must match a
// heading of the target Markdown file as GitHub names it. External links
// (http, https, mailto) are not fetched.
func TestDocsLinks(t *testing.T) {
	files := markdownFiles(t, ".")
	if len(files) == 0 {
		t.Fatal("no Markdown files found")
	}
	anchors := map[string]map[string]bool{} // file -> its heading anchors
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a, err := headingAnchors(path)
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		anchors[path] = a
		return a
	}
	for _, file := range files {
		links, err := markdownLinks(file)
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		for _, l := range links {
			if err := checkLink(file, l.target, anchorsOf); err != "" {
				t.Errorf("%s:%d: link %q: %s", file, l.line, l.target, err)
			}
		}
	}
}

// checkLink reports what is wrong with target, linked from file, or "".
func checkLink(file, target string, anchorsOf func(string) map[string]bool) string {
	if u, err := url.Parse(target); err == nil && u.Scheme != "" {
		return "" // http, https, mailto: not fetched
	}
	path, anchor, _ := strings.Cut(target, "#")
	path, err := url.PathUnescape(path)
	if err != nil {
		return "bad escape: " + err.Error()
	}
	dest := file
	if path != "" {
		if strings.HasPrefix(path, "/") {
			return "absolute path (use a relative one)"
		}
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		if _, err := os.Stat(dest); err != nil {
			return "no such file: " + dest
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	if !anchorsOf(dest)[anchor] {
		return "no heading with anchor #" + anchor + " in " + dest
	}
	return ""
}

// markdownFiles lists the *.md files under root, skipping hidden
// directories, build output and test data.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	return files
}

type mdLink struct {
	line   int
	target string
}

var (
	// An inline link or image: [text](target) or [text](target "title").
	linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// A code span: one or more backticks, then anything up to as many.
	codeSpanRE = regexp.MustCompile("(`+)[^`]*?(`+)")
)

// markdownLinks returns the inline links of a Markdown file outside fenced
// code blocks and code spans.
func markdownLinks(path string) ([]mdLink, error) {
	var links []mdLink
	err := eachProseLine(path, func(n int, line string) {
		line = codeSpanRE.ReplaceAllString(line, "x")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			links = append(links, mdLink{line: n, target: m[1]})
		}
	})
	return links, err
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file: the heading's text lowercased, punctuation other than
// '-' and '_' removed, spaces turned into '-'; a repeated anchor gets
// "-1", "-2"... in order.
func headingAnchors(path string) (map[string]bool, error) {
	anchors := map[string]bool{}
	seen := map[string]int{}
	err := eachProseLine(path, func(_ int, line string) {
		text, ok := headingText(line)
		if !ok {
			return
		}
		a := anchorOf(text)
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	})
	return anchors, err
}

var inlineLinkRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// headingText returns the text of an ATX heading line ("## Text").
func headingText(line string) (string, bool) {
	trimmed := strings.TrimLeft(line, "#")
	level := len(line) - len(trimmed)
	if level == 0 || level > 6 || (trimmed != "" && trimmed[0] != ' ' && trimmed[0] != '\t') {
		return "", false
	}
	text := strings.TrimSpace(trimmed)
	text = strings.TrimSpace(strings.TrimRight(text, "#")) // closing hashes
	return inlineLinkRE.ReplaceAllString(text, "$1"), true
}

func anchorOf(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// eachProseLine calls fn with every line of a Markdown file that is not
// inside a fenced code block (``` or ~~~), numbered from 1.
func eachProseLine(path string, fn func(n int, line string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" ") == "" {
				fence = ""
			}
			continue
		}
		if m := fenceOpen(trimmed); m != "" {
			fence = m
			continue
		}
		fn(n, line)
	}
	return sc.Err()
}

// fenceOpen returns the fence a line opens (three or more ` or ~), or "".
func fenceOpen(line string) string {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

func TestAnchorOf(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"## Rate limiting: the `ratelimit` directive", "rate-limiting-the-ratelimit-directive"},
		{"#### `PUT /ratelimit/brake`, `GET /ratelimit/brake`", "put-ratelimitbrake-get-ratelimitbrake"},
		{"### Why 302 by default, and what 301 costs", "why-302-by-default-and-what-301-costs"},
		{"## key_prefix and max_keys", "key_prefix-and-max_keys"},
		{"### A [link](x.md) here", "a-link-here"},
	} {
		text, ok := headingText(tc.heading)
		if !ok {
			t.Errorf("headingText(%q) is not a heading", tc.heading)
			continue
		}
		if got := anchorOf(text); got != tc.want {
			t.Errorf("anchorOf(%q) = %q, want %q", text, got, tc.want)
		}
	}
}
