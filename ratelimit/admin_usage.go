package ratelimit

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// GET /ratelimit/zones/<zone>/usage: the units and refusals of each key of
// a zone with `usage on` in one period, sorted by key.
//
//	period   current (default), previous, or an RFC 3339 time within it
//	format   json (default: a page), csv (a page), ndjson (every key: the
//	         export for billing, streamed)
//	limit    keys per page, 1-10000 (default 1000); after: the last key
//	         of the previous page (the page's `next`)
//
// Zones of one name in several handlers on one store and prefix are listed
// once.

// usageRow is one key's usage as the admin API writes it.
type usageRow struct {
	Zone        string `json:"zone,omitempty"` // NDJSON only
	Key         string `json:"key"`
	PeriodStart string `json:"period_start"`
	PeriodEnd   string `json:"period_end,omitempty"` // NDJSON only
	Units       int64  `json:"units"`
	Refused     int64  `json:"refused"`
}

const (
	usagePageDefault = 1000
	usagePageMax     = 10000
)

// isUsagePath reports whether path ("zones/...") is zones/<zone>/usage.
func isUsagePath(path string) bool {
	zone, ok := strings.CutSuffix(strings.TrimPrefix(path, "zones/"), "/usage")
	return ok && zone != "" && !strings.Contains(zone, "/")
}

func serveUsage(w http.ResponseWriter, r *http.Request, zone string) error {
	if err := allowMethods(w, r, http.MethodGet); err != nil {
		return err
	}
	targets, err := findZone(zone)
	if err != nil {
		return err
	}
	t := targets[0]
	if t.z.Usage == nil {
		return apiError(http.StatusBadRequest, "zone %q keeps no usage: set usage on", zone)
	}
	q := r.URL.Query()
	start, end, err := usagePeriod(t.z, q.Get("period"), time.Now())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	rows, err := zoneUsage(ctx, targets, start)
	if err != nil {
		return err
	}
	switch q.Get("format") {
	case "", "json":
		page, next, err := usagePage(rows, q)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, map[string]any{"zone": zone, "period_start": rfc3339(start),
			"period_end": rfc3339(end), "keys": page, "next": next})
	case "csv":
		page, _, err := usagePage(rows, q)
		if err != nil {
			return err
		}
		return writeUsageCSV(w, page)
	case "ndjson":
		return writeUsageNDJSON(w, zone, rows, end)
	}
	return apiError(http.StatusBadRequest, "invalid format %q: json, csv or ndjson", q.Get("format"))
}

// usagePeriod is the period of z that period names at now.
func usagePeriod(z *Zone, period string, now time.Time) (start, end time.Time, err error) {
	at := now
	switch period {
	case "", "current":
	case "previous":
		s, _ := periodOf(z.limit, now)
		at = s.Add(-time.Microsecond)
	default:
		if at, err = time.Parse(time.RFC3339Nano, period); err != nil {
			return start, end, apiError(http.StatusBadRequest, "invalid period %q: current, previous or an RFC 3339 time", period)
		}
	}
	start, end = periodOf(z.limit, at)
	return start, end, nil
}

// zoneUsage reads the zone's usage at start from each target's store,
// each store and prefix once.
func zoneUsage(ctx context.Context, targets []zoneTarget, start time.Time) ([]limiter.UsageRow, error) {
	var rows []limiter.UsageRow
	seen := map[string]bool{}
	for _, t := range targets {
		ur, ok := t.e.h.store.(limiter.UsageReader)
		if !ok {
			return nil, apiError(http.StatusNotImplemented, "zone %q: the store of handler %d keeps no usage", t.z.Name, t.e.id)
		}
		got, err := ur.Usage(ctx, t.e.h.prefix, t.z.Name, start)
		if err != nil {
			return nil, apiError(http.StatusServiceUnavailable, "zone %q: reading usage: %v", t.z.Name, err)
		}
		for _, row := range got {
			if !seen[row.StoreKey] {
				seen[row.StoreKey] = true
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

// usagePage is the page of rows the query asks for, and the next page's
// `after` ("" on the last page).
func usagePage(rows []limiter.UsageRow, q map[string][]string) ([]usageRow, string, error) {
	limit := usagePageDefault
	if v := first(q["limit"]); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > usagePageMax {
			return nil, "", apiError(http.StatusBadRequest, "invalid limit %q: 1 to %d", v, usagePageMax)
		}
		limit = n
	}
	after := first(q["after"])
	page := []usageRow{}
	for _, row := range rows {
		if after != "" && row.Key <= after {
			continue
		}
		if len(page) == limit {
			return page, page[len(page)-1].Key, nil
		}
		page = append(page, usageRow{Key: row.Key, PeriodStart: rfc3339(row.Start), Units: row.Units, Refused: row.Refused})
	}
	return page, "", nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// writeUsageCSV writes key,period_start,units,refused rows (RFC 4180:
// keys exactly as the JSON has them, quoted where they need it).
func writeUsageCSV(w http.ResponseWriter, page []usageRow) error {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"key", "period_start", "units", "refused"})
	for _, row := range page {
		_ = cw.Write([]string{row.Key, row.PeriodStart, strconv.FormatInt(row.Units, 10), strconv.FormatInt(row.Refused, 10)})
	}
	cw.Flush()
	return cw.Error()
}

// writeUsageNDJSON writes every row as one JSON object per line.
func writeUsageNDJSON(w http.ResponseWriter, zone string, rows []limiter.UsageRow, end time.Time) error {
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for _, row := range rows {
		if err := enc.Encode(usageRow{Zone: zone, Key: row.Key, PeriodStart: rfc3339(row.Start), PeriodEnd: rfc3339(end),
			Units: row.Units, Refused: row.Refused}); err != nil {
			return err
		}
	}
	return nil
}
