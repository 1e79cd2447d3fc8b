package shortener

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// apiStats answers GET <api>/links/<code>/stats?from=&to=&granularity=&tz=&group_by=&limit=&format=
// (RFC 3339, default the last 30 days; day; UTC; none; 10; json) with the
// link's click counters, their timeseries and, with group_by, the
// breakdown; as CSV the breakdown if group_by is given, else the
// timeseries.
func (h *Handler) apiStats(w http.ResponseWriter, r *http.Request, code string) error {
	if h.clicks == nil {
		return apiErr(http.StatusNotFound, "click counting is off")
	}
	if !validKey(code) {
		return apiErr(http.StatusNotFound, "link not found")
	}
	sq, err := h.parseStatsQuery(r.URL.Query())
	if err != nil {
		return err
	}
	from, to, group, format := sq.from, sq.to, sq.group, sq.format
	spec, err := clicks.ParseSeriesSpec(r.URL.Query())
	if err != nil {
		return apiErr(http.StatusBadRequest, "%v", err)
	}
	if err := spec.Within(from, clicks.HourlyHorizon(h.now(), time.Duration(h.ClicksHourlyRetention))); err != nil {
		return apiErr(http.StatusBadRequest, "%v", err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	if err := h.linkExists(ctx, code); err != nil {
		return err
	}
	_, name := link.SplitDomainKey(code) // for file names
	var breakdown []clicks.BreakdownEntry
	if group.Dim != "" {
		if breakdown, err = h.clicks.Breakdown(ctx, code, group.Dim, from, to, group.Limit); err != nil {
			return h.clicksErr(err)
		}
		if format == "csv" {
			return clicks.WriteBreakdownCSV(w, name+"-"+group.Dim, group.Dim, breakdown, clicks.HasUniques(group.Dim))
		}
	}
	st, err := h.clicks.Stats(ctx, code, from, to)
	if err != nil {
		return h.clicksErr(err)
	}
	st.Domain, st.Code = link.SplitDomainKey(code)
	series := spec.Series(append(st.Hourly, clicks.DailyAsHours(st.Daily)...), from, to)
	spec.WithUniques(series, st.Visitors)
	if format == "csv" {
		return clicks.WriteSeriesCSV(w, name, series)
	}
	writeJSON(w, http.StatusOK, clicks.StatsAnswer{Stats: st, Granularity: spec.Granularity, TZ: spec.Loc.String(), Timeseries: series,
		GroupBy: group.Dim, Breakdown: breakdown})
	return nil
}

// statsQuery is what both stats endpoints read from the query string.
type statsQuery struct {
	from, to time.Time
	group    clicks.BreakdownSpec
	format   string
}

// parseStatsQuery reads from, to, group_by, limit and format; an error is
// the 400 answer naming the parameter.
func (h *Handler) parseStatsQuery(q url.Values) (statsQuery, error) {
	var sq statsQuery
	var err error
	if sq.from, sq.to, err = clicks.ParseStatsRange(q, h.now()); err != nil {
		return sq, apiErr(http.StatusBadRequest, "%v", err)
	}
	if sq.group, err = clicks.ParseBreakdownSpec(q); err != nil {
		return sq, apiErr(http.StatusBadRequest, "%v", err)
	}
	if sq.format, err = clicks.StatsFormat(q); err != nil {
		return sq, apiErr(http.StatusBadRequest, "%v", err)
	}
	return sq, nil
}

// clicksErr logs a failed read of the click counters and answers 503.
func (h *Handler) clicksErr(err error) error {
	h.logger.Warn("shortener api: reading click stats failed", zap.Error(err))
	return apiErr(http.StatusServiceUnavailable, "click counters unavailable")
}

// apiOverview answers GET <api>/stats?from=&to=&group_by=&limit=&format=
// with the clicks of all links over the UTC days overlapping the window:
// totals, the top links, countries and referrers and, with group_by, the
// breakdown (alone as CSV; without group_by the CSV lists the top links).
func (h *Handler) apiOverview(w http.ResponseWriter, r *http.Request) error {
	if h.clicks == nil {
		return apiErr(http.StatusNotFound, "click counting is off")
	}
	sq, err := h.parseStatsQuery(r.URL.Query())
	if err != nil {
		return err
	}
	from, to, group, format := sq.from, sq.to, sq.group, sq.format
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	o, err := h.clicks.Overview(ctx, from, to, group.Limit)
	if err != nil {
		return h.clicksErr(err)
	}
	for _, part := range []struct {
		dim  string
		into *[]clicks.BreakdownEntry
	}{{clicks.DimCountry, &o.Countries}, {clicks.DimReferrer, &o.Referrers}, {group.Dim, &o.Breakdown}} {
		if part.dim == "" {
			continue
		}
		if *part.into, err = h.clicks.Breakdown(ctx, "", part.dim, from, to, group.Limit); err != nil {
			return h.clicksErr(err)
		}
	}
	o.GroupBy = group.Dim
	if format == "csv" && group.Dim != "" {
		return clicks.WriteBreakdownCSV(w, "clicks-"+group.Dim, group.Dim, o.Breakdown, false)
	}
	if format == "csv" {
		links := make([]clicks.BreakdownEntry, len(o.Links))
		for i, l := range o.Links {
			links[i] = clicks.BreakdownEntry{Value: link.DomainKey(l.Domain, l.Code), Clicks: l.Clicks}
		}
		return clicks.WriteBreakdownCSV(w, "clicks-links", "code", links, false)
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

// linkExists is nil when the store holds code (revoked or not), else the
// API's 404 or store error.
func (h *Handler) linkExists(ctx context.Context, code string) error {
	if _, err := h.store.Get(ctx, code); errors.Is(err, link.ErrNotFound) {
		return apiErr(http.StatusNotFound, "link not found")
	} else if err != nil {
		return h.storeErr(err)
	}
	return nil
}
