package shortener

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// exportPage is how many links one store round trip of an export reads:
// one keyset page of the lister, a short statement at any table size.
const exportPage = link.MaxListLimit

// csvHeader names the columns of a CSV export. tags are joined by single
// spaces (a tag holds none); a missing time, title or notes is an empty
// cell; clicks is the all-time total (empty when clicks are not counted).
var csvHeader = []string{"code", "short_url", "long_url", "created_at", "expires_at", "revoked_at", "title", "tags", "notes", "clicks"}

// apiExport answers GET <api>/links/export?format=ndjson|csv&status=:
// every link of the status (default all), oldest first, streamed page by
// page and flushed after each, so memory stays flat at any number of
// links. A store failure before the first byte is a 503; after it the
// connection is cut, so the client sees a broken transfer, never a
// complete-looking file.
//
// On the API path, GET and HEAD of /links/export are the export: a link
// whose code is "export" is read with the listing (q=export) or its
// stats, and still redirects, and DELETE <api>/links/export revokes it.
func (h *Handler) apiExport(w http.ResponseWriter, r *http.Request) error {
	format, status, withStats, err := parseExportQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	rows, err := h.exportRows(withStats)
	if err != nil {
		return err
	}
	ll := h.lister()
	if ll == nil {
		return apiErr(http.StatusNotImplemented, "this store cannot list links")
	}
	q := link.ListQuery{Status: status, Sort: link.SortCreated, Limit: exportPage, Now: h.now(), Domain: domainIn(r.Context())}
	page, err := h.exportPage(r.Context(), ll, q)
	if err != nil {
		return h.storeErr(err)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", map[string]string{"csv": "text/csv; charset=utf-8", "ndjson": "application/x-ndjson"}[format])
	w.Header().Set("Content-Disposition", `attachment; filename="links.`+format+`"`)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	write := h.ndjsonWriter(w, r, rows)
	if format == "csv" {
		write = h.csvWriter(w, r)
	}
	rc := http.NewResponseController(w)
	for {
		if err := write(page.Links); err != nil {
			return h.cutExport(err)
		}
		_ = rc.Flush()
		if page.NextCursor == "" {
			return nil
		}
		q.Cursor = page.NextCursor
		if page, err = h.exportPage(r.Context(), ll, q); err != nil {
			return h.cutExport(err)
		}
	}
}

// exportPage reads one page within its own deadline.
func (h *Handler) exportPage(ctx context.Context, ll link.LinkLister, q link.ListQuery) (link.ListPage, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	return ll.ListLinks(ctx, q)
}

// cutExport ends an export that failed after its first byte: the panic
// makes net/http drop the connection without the final chunk.
func (h *Handler) cutExport(err error) error {
	if !errors.Is(err, context.Canceled) {
		h.logger.Warn("shortener api: export cut short", zap.Error(err))
	}
	panic(http.ErrAbortHandler)
}

// parseExportQuery judges format (ndjson or csv, default ndjson), status
// (as in a listing, default all) and with_stats (0 or 1, default 0; 1 only
// with ndjson), each once and not empty (checkQuery); other parameters
// are ignored.
func parseExportQuery(raw string) (format, status string, withStats bool, err error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return "", "", false, apiErr(http.StatusBadRequest, "query string: %v", err)
	}
	format, status = "ndjson", link.StatusAll
	switch v := vals.Get("format"); v {
	case "":
	case "ndjson", "csv":
		format = v
	default:
		return "", "", false, apiErr(http.StatusBadRequest, "format must be ndjson or csv")
	}
	if v := vals.Get("status"); v != "" {
		if err := checkListStatus(v); err != nil {
			return "", "", false, err
		}
		status = v
	}
	switch vals.Get("with_stats") {
	case "", "0":
	case "1":
		withStats = true
	default:
		return "", "", false, apiErr(http.StatusBadRequest, "with_stats must be 0 or 1")
	}
	if withStats && format != "ndjson" {
		return "", "", false, apiErr(http.StatusBadRequest, "with_stats: only with format ndjson")
	}
	return format, status, withStats, nil
}

// ndjsonWriter writes each link as GET <api>/links/<code> answers it, one
// JSON object a line; with rows (with_stats), with its hourly clicks.
func (h *Handler) ndjsonWriter(w http.ResponseWriter, r *http.Request, rows clicks.RowReader) func([]link.ListedLink) error {
	enc := json.NewEncoder(w)
	return func(links []link.ListedLink) error {
		if rows != nil {
			return h.writeWithStats(r, enc, rows, links)
		}
		for _, l := range links {
			if err := enc.Encode(h.listedResponse(r, l)); err != nil {
				return err
			}
		}
		return nil
	}
}

// csvWriter writes the header, then a row a link, every cell through
// link.CSVCell.
func (h *Handler) csvWriter(w http.ResponseWriter, r *http.Request) func([]link.ListedLink) error {
	cw := csv.NewWriter(w)
	header := true
	return func(links []link.ListedLink) error {
		if header {
			header = false
			if err := cw.Write(csvHeader); err != nil {
				return err
			}
		}
		for _, l := range links {
			if err := cw.Write(h.csvRow(r, l)); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	}
}

func (h *Handler) csvRow(r *http.Request, l link.ListedLink) []string {
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	clicks := ""
	if h.clicks != nil {
		clicks = strconv.FormatInt(l.Clicks, 10)
	}
	_, code := link.SplitDomainKey(l.Code)
	row := []string{code, h.linkURL(r, l.Code), l.LongURL, at(l.CreatedAt), at(l.ExpiresAt), at(l.RevokedAt),
		l.Title, strings.Join(l.Tags, " "), l.Notes, clicks}
	for i := range row {
		row[i] = link.CSVCell(row[i])
	}
	return row
}
