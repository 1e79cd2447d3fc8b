package usagecli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/spf13/cobra"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	_ "github.com/edgekit/caddy-edgekit/ratelimit"
)

// run runs `usage export` with args, returning its output and error.
func run(args ...string) (string, error) {
	root := &cobra.Command{Use: "ratelimit"}
	usage := &cobra.Command{Use: "usage"}
	usage.AddCommand(exportCommand())
	root.AddCommand(usage)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"usage", "export"}, args...))
	err := root.Execute()
	return out.String(), err
}

// TestExport: against a running Caddy, the command writes the zone's
// usage as NDJSON (to standard output or a file) and CSV; a zone without
// usage and bad flags are errors naming the problem.
func TestExport(t *testing.T) {
	_, prefix := testenv.Redis(t)
	admin, port := testenv.FreePort(t), testenv.FreePort(t)
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: admin, LoadRequestTimeout: 30 * time.Second})
	tester.InitServer(fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
}
http://localhost:%[2]d {
	ratelimit {
		zone monthly {
			key {http.request.header.X-Customer}
			events 5
			algorithm fixed_window
			window 1mo calendar tz Europe/Berlin
			usage on
		}
		zone plain {
			key {http.request.header.X-Customer}
			events 100
			window 1m
		}
		redis {
			url %[3]s
			key_prefix %[4]s
		}
	}
	respond "ok"
}
`, admin, port, testenv.RedisURL(t), prefix), "caddyfile")
	for _, c := range []string{"acme", "acme", "acme", "globex"} {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://localhost:%d/", port), nil)
		req.Header.Set("X-Customer", c)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	addr := fmt.Sprintf("localhost:%d", admin)
	out, err := run("--zone", "monthly", "--address", addr)
	if err != nil {
		t.Fatalf("export: %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first struct {
		Zone, Key   string
		Units       int64
		PeriodStart string `json:"period_start"`
	}
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.Key != "acme" || first.Units != 3 || first.Zone != "monthly" {
		t.Fatalf("NDJSON %q", out)
	}
	file := filepath.Join(t.TempDir(), "usage.csv")
	if _, err := run("--zone", "monthly", "--address", addr, "--format", "csv", "-o", file); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != "key,period_start,units,refused\nacme,"+first.PeriodStart+",3,0\nglobex,"+first.PeriodStart+",1,0\n" {
		t.Errorf("CSV %q", b)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--zone", "plain", "--address", addr}, "keeps no usage"},
		{[]string{"--zone", "nope", "--address", addr}, "no loaded zone"},
		{[]string{"--address", addr}, "--zone is required"},
		{[]string{"--zone", "monthly", "--format", "xml", "--address", addr}, "invalid --format"},
		{[]string{"--zone", "monthly", "--period", "soon", "--address", addr}, "invalid period"},
	} {
		if out, err := run(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v %s, want an error with %q", c.args, err, out, c.want)
		}
	}
}
