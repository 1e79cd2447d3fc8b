package shortener

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// GET <api>/links/export?with_stats=1 adds to each NDJSON line "hourly":
// the people and bots of every UTC hour the store holds for the link (the
// hours not yet rolled up, and each rolled-up day at its 00:00 hour), so
// that an import of the export (import_stats.go) restores the rollups.
// Referrers, dimension counts and unique-visitor sketches are not
// exported.

// exportRows is the reader of an export with stats (nil without).
func (h *Handler) exportRows(withStats bool) (clicks.RowReader, error) {
	if !withStats {
		return nil, nil
	}
	if h.clicks != nil {
		if rr, ok := h.clicks.Cfg.Sink.(clicks.RowReader); ok {
			return rr, nil
		}
	}
	return nil, apiErr(http.StatusBadRequest, "with_stats: click counting is off")
}

// exportedLink is an NDJSON line of an export with stats.
type exportedLink struct {
	link.Response
	Hourly []exportedHour `json:"hourly"`
}

// exportedHour is a row of exportedLink's hourly, as an import reads it.
type exportedHour struct {
	Hour   time.Time `json:"hour"`
	People int64     `json:"people"`
	Bots   int64     `json:"bots"`
}

// writeWithStats writes one page of links with their rollups, read in
// one round trip within its own deadline.
func (h *Handler) writeWithStats(r *http.Request, enc *json.Encoder, rows clicks.RowReader, links []link.ListedLink) error {
	codes := make([]string, len(links))
	for i, l := range links {
		codes[i] = l.Code
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	byCode, err := rows.ClickRows(ctx, codes)
	if err != nil {
		return err
	}
	for _, l := range links {
		line := exportedLink{Response: h.listedResponse(r, l), Hourly: []exportedHour{}}
		for _, row := range byCode[l.Code] {
			line.Hourly = append(line.Hourly, exportedHour(row))
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}
