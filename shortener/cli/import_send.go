package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Modes of sending an import.
const (
	modeImport = "import" // the batch endpoint's import mode (keeps times, revocations, totals)
	modeCreate = "create" // a server without it: the create mode, and a GET per taken code
)

// importItemJSON is a record as an item of POST <api>/links/batch with
// "mode": "import" (an NDJSON export line is one too).
type importItemJSON struct {
	Code            string          `json:"code"`
	LongURL         string          `json:"long_url"`
	CreatedAt       *time.Time      `json:"created_at,omitempty"`
	ExpiresAt       *time.Time      `json:"expires_at,omitempty"`
	RevokedAt       *time.Time      `json:"revoked_at,omitempty"`
	Title           *string         `json:"title,omitempty"`
	Tags            []string        `json:"tags,omitempty"`
	Notes           *string         `json:"notes,omitempty"`
	Clicks          *int64          `json:"clicks,omitempty"`
	RedirectStatus  *int            `json:"redirect_status,omitempty"`
	ValidFrom       *time.Time      `json:"valid_from,omitempty"`
	MaxClicks       *int64          `json:"max_clicks,omitempty"`
	ForwardQuery    *bool           `json:"forward_query,omitempty"`
	RemainingClicks *int64          `json:"remaining_clicks,omitempty"`
	Hourly          json.RawMessage `json:"hourly,omitempty"`
}

// record is the item read from line.
func (it importItemJSON) record(line int) Record {
	return Record{
		Line: line, Code: it.Code, LongURL: it.LongURL, Title: it.Title, Tags: it.Tags, Notes: it.Notes,
		CreatedAt: it.CreatedAt, ExpiresAt: it.ExpiresAt, RevokedAt: it.RevokedAt, Clicks: it.Clicks,
		RedirectStatus: it.RedirectStatus, ValidFrom: it.ValidFrom, MaxClicks: it.MaxClicks, ForwardQuery: it.ForwardQuery,
		RemainingClicks: it.RemainingClicks, Hourly: it.Hourly,
	}
}

// importItem is r as an import item.
func importItem(r *Record) importItemJSON {
	return importItemJSON{
		Code: r.Code, LongURL: r.LongURL, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt,
		Title: r.Title, Tags: r.Tags, Notes: r.Notes, Clicks: r.Clicks, RedirectStatus: r.RedirectStatus,
		ValidFrom: r.ValidFrom, MaxClicks: r.MaxClicks, ForwardQuery: r.ForwardQuery, RemainingClicks: r.RemainingClicks,
		Hourly: r.Hourly,
	}
}

// importResult is one item's answer in import mode.
type importResult struct {
	Code     string `json:"code"`
	Result   string `json:"result"`
	Error    string `json:"error"`
	Existing *struct {
		LongURL string `json:"long_url"`
	} `json:"existing"`
}

// send imports one batch and answers an outcome per record, in order:
// through the import mode, or, when the server refuses the mode (a
// version without it), through the create mode from then on.
func (im *importer) send(ctx context.Context, batch []pending) ([]outcome, error) {
	if im.mode == modeCreate {
		return im.sendCreate(ctx, batch)
	}
	outs, err := im.sendImport(ctx, batch)
	if ae, ok := err.(*APIError); ok && im.mode == "" && ae.Status == http.StatusBadRequest && strings.Contains(ae.Msg, "mode") {
		im.mode = modeCreate
		return im.sendCreate(ctx, batch)
	}
	if err == nil {
		im.mode = modeImport
	}
	return outs, err
}

// sendImport posts the batch in import mode (dry_run with --dry-run);
// conflicts are PATCHed with --overwrite.
func (im *importer) sendImport(ctx context.Context, batch []pending) ([]outcome, error) {
	var body bytes.Buffer
	body.WriteString(`{"mode":"import","dry_run":` + map[bool]string{true: "true", false: "false"}[im.dryRun] + `,"links":[`)
	for i, p := range batch {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(p.item)
	}
	body.WriteString("]}")
	var answer struct {
		Results []importResult `json:"results"`
	}
	if err := im.postImportBatch(ctx, body.Bytes(), &answer); err != nil {
		return nil, err
	}
	if len(answer.Results) != len(batch) {
		return nil, exitErr(ExitServer, "the batch endpoint answered %d results for %d links", len(answer.Results), len(batch))
	}
	outs := make([]outcome, len(batch))
	for i, r := range answer.Results {
		o, err := im.settleImport(ctx, batch[i].rec, r)
		if err != nil {
			return nil, err
		}
		outs[i] = o
	}
	return outs, nil
}

// settleImport turns one import result into its outcome.
func (im *importer) settleImport(ctx context.Context, rec Record, r importResult) (outcome, error) {
	o := outcome{Line: rec.Line, Code: rec.Code, Result: r.Result, Reason: r.Error}
	switch r.Result {
	case outCreated, outSkipped, outRefused:
		return o, nil
	case outConflict:
		if !im.overwrite {
			return o, nil
		}
		if r.Existing != nil && r.Existing.LongURL == rec.LongURL {
			o.Reason += " (--overwrite edits the link's fields through PATCH, not its click total)"
			return o, nil
		}
		if im.dryRun {
			o.Result = outUpdated
			return o, nil
		}
		was := ""
		if r.Existing != nil {
			was = r.Existing.LongURL
		}
		return im.overwriteLink(ctx, rec, was)
	}
	return o, exitErr(ExitServer, "%s %d: the import answered result %q", im.unit, rec.Line, r.Result)
}
