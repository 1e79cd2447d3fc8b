package clicks

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// BreakdownSpec is what the stats answers group by: a dimension ("":
// none) and how many of its values they list.
type BreakdownSpec struct {
	Dim   string
	Limit int
}

// groupByNames lists the values of group_by, for errors.
var groupByNames = strings.Join(append(ClickDimensions[:], DimReferrer), ", ")

// ParseBreakdownSpec reads the group_by (a dimension or referrer; default
// none) and limit (1 to MaxBreakdownLimit; default
// DefaultBreakdownLimit) query parameters; each error wraps
// ErrBadStatsRange and names the parameter.
func ParseBreakdownSpec(q url.Values) (BreakdownSpec, error) {
	spec := BreakdownSpec{Limit: DefaultBreakdownLimit}
	dim, err := singleParam(q, "group_by")
	if err != nil {
		return spec, err
	}
	if dim != "" && !validGroupBy(dim) {
		return spec, fmt.Errorf("%w: group_by must be one of %s", ErrBadStatsRange, groupByNames)
	}
	spec.Dim = dim
	l, err := singleParam(q, "limit")
	if err != nil || l == "" {
		return spec, err
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > MaxBreakdownLimit {
		return spec, fmt.Errorf("%w: limit must be an integer from 1 to %d", ErrBadStatsRange, MaxBreakdownLimit)
	}
	spec.Limit = n
	return spec, nil
}

// WriteBreakdownCSV writes a breakdown as CSV: a header (the dimension,
// clicks and, with uniques, uniques), then one row per value, most clicks
// first. The values are what clients sent (a referrer, a city): every
// cell goes through link.CSVCell, as the export's do.
func WriteBreakdownCSV(w http.ResponseWriter, name, dim string, entries []BreakdownEntry, uniques bool) error {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
	cw := csv.NewWriter(w)
	header := []string{dim, "clicks"}
	if uniques {
		header = append(header, "uniques")
	}
	_ = cw.Write(header)
	for _, e := range entries {
		row := []string{link.CSVCell(e.Value), link.CSVCell(strconv.FormatInt(e.Clicks, 10))}
		if uniques {
			var n int64
			if e.Uniques != nil {
				n = *e.Uniques
			}
			row = append(row, link.CSVCell(strconv.FormatInt(n, 10)))
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}
