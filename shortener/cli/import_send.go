package cli

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Modes of sending an import.
const (
	modeImport = "import" // the batch endpoint's import mode (keeps times, revocations, totals)
	modeCreate = "create" // a server without it: the create mode, and a GET per taken code
)

// recordOf is the record of an import item read from line; a time that
// is not RFC 3339 is a RecordError naming its field.
func recordOf(it link.ImportItem, line int) (Record, error) {
	rec := Record{
		Line: line, Code: it.Code, LongURL: it.LongURL, Title: strPtr(it.Title), Tags: it.Tags, Notes: strPtr(it.Notes),
		Clicks: it.Clicks, RedirectStatus: it.RedirectStatus, MaxClicks: it.MaxClicks, ForwardQuery: it.ForwardQuery,
		RemainingClicks: it.RemainingClicks, Hourly: it.Hourly,
	}
	for _, f := range []struct {
		name, v string
		to      **time.Time
	}{
		{"created_at", it.CreatedAt, &rec.CreatedAt}, {"expires_at", it.ExpiresAt, &rec.ExpiresAt},
		{"revoked_at", it.RevokedAt, &rec.RevokedAt}, {"valid_from", it.ValidFrom, &rec.ValidFrom},
	} {
		if f.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, f.v)
		if err != nil {
			return Record{Line: line}, recordErr(line, it.Code, "%s: not an RFC 3339 time: %q", f.name, f.v)
		}
		*f.to = &t
	}
	return rec, nil
}

// importItem is r as an import item.
func importItem(r *Record) link.ImportItem {
	return link.ImportItem{
		Code: r.Code, LongURL: r.LongURL, CreatedAt: rfc3339(r.CreatedAt), ExpiresAt: rfc3339(r.ExpiresAt),
		RevokedAt: rfc3339(r.RevokedAt), Title: deref(r.Title), Tags: r.Tags, Notes: deref(r.Notes), Clicks: r.Clicks,
		RuleRequest: ruleRequest(r), RemainingClicks: r.RemainingClicks, Hourly: r.Hourly,
	}
}

// ruleRequest is the rules of r as a request carries them.
func ruleRequest(r *Record) link.RuleRequest {
	return link.RuleRequest{RedirectStatus: r.RedirectStatus, ValidFrom: rfc3339(r.ValidFrom), MaxClicks: r.MaxClicks, ForwardQuery: r.ForwardQuery}
}

// rfc3339 is t as the API reads a time, "" for nil.
func rfc3339(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// deref is *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
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
		Results []link.ImportResult `json:"results"`
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
func (im *importer) settleImport(ctx context.Context, rec Record, r link.ImportResult) (outcome, error) {
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
