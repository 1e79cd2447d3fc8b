package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

// statsFlags map to the stats endpoint's query parameters.
type statsFlags struct {
	from, to, granularity, tz string
	csv                       bool
}

// stats is the part of a stats answer the table shows.
type stats struct {
	Code    string `json:"code"`
	Total   int64  `json:"total"`
	People  int64  `json:"people"`
	Bots    int64  `json:"bots"`
	AllTime *struct {
		Total int64 `json:"total"`
	} `json:"all_time"`
	Timeseries []struct {
		Start   string `json:"start"`
		Clicks  int64  `json:"clicks"`
		People  int64  `json:"people"`
		Bots    int64  `json:"bots"`
		Uniques *int64 `json:"uniques"`
	} `json:"timeseries"`
	Referrers []struct {
		Host  string `json:"host"`
		Count int64  `json:"count"`
	} `json:"referrers"`
}

func newStatsCmd(g *globals) *cobra.Command {
	var f statsFlags
	cmd := &cobra.Command{
		Use:   "stats <code>",
		Short: "Show a link's clicks over time (GET <api>/links/<code>/stats)",
		Args:  cobra.ExactArgs(1),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "start, RFC 3339 (default: 30 days before --to)")
	fl.StringVar(&f.to, "to", "", "end, RFC 3339 (default: now)")
	fl.StringVar(&f.granularity, "granularity", "", "hour, day (default), week or month")
	fl.StringVar(&f.tz, "tz", "", "IANA time zone of the buckets (default UTC)")
	fl.BoolVar(&f.csv, "csv", false, "print the timeseries as the API's CSV")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		c, err := g.client()
		if err != nil {
			return err
		}
		q := url.Values{}
		for k, v := range map[string]string{"from": f.from, "to": f.to, "granularity": f.granularity, "tz": f.tz} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if f.csv {
			q.Set("format", "csv")
		}
		resp, err := c.request(ctxOf(cmd), http.MethodGet, linkPath(args[0], "/stats"), q, nil, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return g.printStats(cmd.OutOrStdout(), c, resp, f.csv)
	})
	return cmd
}

// printStats copies the CSV or the JSON of c's answer resp, or draws the
// table.
func (g *globals) printStats(out io.Writer, c *client, resp *http.Response, csv bool) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBody))
	if err != nil {
		return exitErr(ExitServer, "reading the stats: %v", err)
	}
	if csv {
		_, err = out.Write(b)
		return err
	}
	if !json.Valid(b) {
		return exitErr(ExitServer, "%s", c.notAPI(resp, "not the JSON expected"))
	}
	if g.json {
		_, err = out.Write(append(compactJSON(b), '\n'))
		return err
	}
	var s stats
	if err := json.Unmarshal(b, &s); err != nil {
		return exitErr(ExitServer, "%s", c.notAPI(resp, "not the JSON expected ("+err.Error()+")"))
	}
	return writeStatsTable(out, &s)
}

func writeStatsTable(out io.Writer, s *stats) error {
	t := newTable(out, false)
	t.row("code", s.Code)
	t.row("clicks", fmt.Sprintf("%d (people %d, bots %d)", s.Total, s.People, s.Bots))
	if s.AllTime != nil {
		t.row("all time", strconv.FormatInt(s.AllTime.Total, 10))
	}
	for _, r := range s.Referrers {
		t.row("referrer", fmt.Sprintf("%s %d", r.Host, r.Count))
	}
	t.row("")
	t.row("START", "CLICKS", "PEOPLE", "BOTS", "UNIQUES")
	for _, p := range s.Timeseries {
		t.row(p.Start, strconv.FormatInt(p.Clicks, 10), strconv.FormatInt(p.People, 10), strconv.FormatInt(p.Bots, 10), cellInt(p.Uniques))
	}
	return t.flush()
}
