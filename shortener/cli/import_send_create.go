package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// createItem is r as an item of a batch create.
func createItem(r *Record) link.CreateRequest {
	return link.CreateRequest{
		Code: r.Code, LongURL: r.LongURL, Title: deref(r.Title), Tags: r.Tags, Notes: deref(r.Notes),
		ExpiresAt: rfc3339(r.ExpiresAt), RuleRequest: ruleRequest(r),
	}
}

// sendCreate imports one batch through a server without the import
// mode: the batch endpoint's create mode, then, for each taken code, the
// link as stored (skipped or conflict), a PATCH with --overwrite, and a
// DELETE for a record that was revoked at its source. Creation times and
// click totals are not kept (the summary notes it).
func (im *importer) sendCreate(ctx context.Context, batch []pending) ([]outcome, error) {
	results := make([]link.BatchResult, len(batch))
	if !im.dryRun {
		var err error
		if results, err = im.postBatch(ctx, batch); err != nil {
			return nil, err
		}
	}
	outs := make([]outcome, len(batch))
	for i, p := range batch {
		o, err := im.settle(ctx, p.rec, results[i])
		if err != nil {
			return nil, err
		}
		outs[i] = o
	}
	return outs, nil
}

// postBatch sends the items; a failure of the whole request ends the
// import (records before this batch are in, this batch may be: run the
// import again, the links created are skipped).
func (im *importer) postBatch(ctx context.Context, batch []pending) ([]link.BatchResult, error) {
	var body bytes.Buffer
	body.WriteString(`{"links":[`)
	for i, p := range batch {
		if i > 0 {
			body.WriteByte(',')
		}
		item, _ := json.Marshal(createItem(&p.rec))
		body.Write(item)
	}
	body.WriteString("]}")
	var answer struct {
		Results []link.BatchResult `json:"results"`
	}
	if _, err := im.c.getJSON(ctx, http.MethodPost, "/links/batch", nil, body.Bytes(), nil, &answer); err != nil {
		return nil, err
	}
	if len(answer.Results) != len(batch) {
		return nil, exitErr(ExitServer, "the batch endpoint answered %d results for %d links", len(answer.Results), len(batch))
	}
	return answer.Results, nil
}

// settle turns one item's answer into its outcome. In a dry run the
// answer is empty and the stored link decides.
func (im *importer) settle(ctx context.Context, rec Record, r link.BatchResult) (outcome, error) {
	o := outcome{Line: rec.Line, Code: rec.Code}
	if rec.CreatedAt != nil {
		im.dropped["created_at"] = true
	}
	if rec.Clicks != nil && *rec.Clicks > 0 {
		im.dropped["clicks"] = true
	}
	if len(rec.Hourly) > 0 {
		im.dropped["hourly"] = true
	}
	switch {
	case r.Status == http.StatusCreated:
		o.Result = outCreated
		return o, im.revokeIfRevoked(ctx, rec)
	case r.Status == 0 || r.Status == http.StatusConflict:
		return im.compare(ctx, rec)
	case r.Status >= 500:
		return o, exitErr(ExitServer, "%s %d: %s (HTTP %d)", im.unit, rec.Line, r.Error, r.Status)
	}
	o.Result, o.Reason = outRefused, r.Error
	return o, nil
}

// revokeIfRevoked revokes a created link that was revoked at its source.
func (im *importer) revokeIfRevoked(ctx context.Context, rec Record) error {
	if rec.RevokedAt == nil {
		return nil
	}
	resp, err := im.c.request(ctx, http.MethodDelete, linkPath(rec.Code), nil, nil, nil)
	if err != nil {
		return fmt.Errorf("%s %d: revoking %s: %w", im.unit, rec.Line, rec.Code, err)
	}
	resp.Body.Close()
	return nil
}

// compare decides a record whose code may be taken: the stored link with
// the same destination is skipped, another one a conflict (updated with
// --overwrite); no stored link is a creation (in a dry run).
func (im *importer) compare(ctx context.Context, rec Record) (outcome, error) {
	o := outcome{Line: rec.Line, Code: rec.Code}
	var stored Link
	_, err := im.c.getJSON(ctx, http.MethodGet, linkPath(rec.Code), nil, nil, nil, &stored)
	if ae, ok := err.(*APIError); ok && ae.Status == http.StatusNotFound && im.dryRun {
		o.Result = outCreated
		return o, nil
	}
	if err != nil {
		return o, fmt.Errorf("%s %d: reading %s: %w", im.unit, rec.Line, rec.Code, err)
	}
	if stored.LongURL == rec.LongURL {
		o.Result = outSkipped
		return o, nil
	}
	o.Result, o.Reason = outConflict, "the code is taken, with long_url "+stored.LongURL
	if !im.overwrite || stored.RevokedAt != nil {
		return o, nil
	}
	if im.dryRun {
		o.Result = outUpdated
		return o, nil
	}
	return im.overwriteLink(ctx, rec, stored.LongURL)
}

// overwriteLink edits a conflicting link to the record (PATCH keeps the
// link's history).
func (im *importer) overwriteLink(ctx context.Context, rec Record, was string) (outcome, error) {
	o := outcome{Line: rec.Line, Code: rec.Code, Result: outUpdated, Reason: "long_url was " + was + " (edited through PATCH, history kept)"}
	patch, _ := json.Marshal(map[string]any{"long_url": rec.LongURL, "title": rec.Title, "tags": rec.Tags, "notes": rec.Notes})
	hdr := http.Header{"Content-Type": {"application/merge-patch+json"}}
	resp, err := im.c.request(ctx, http.MethodPatch, linkPath(rec.Code), nil, patch, hdr)
	if ae, ok := err.(*APIError); ok && ae.Status < 500 {
		o.Result, o.Reason = outRefused, "overwrite: "+ae.Msg
		return o, nil
	}
	if err != nil {
		return o, fmt.Errorf("%s %d: editing %s: %w", im.unit, rec.Line, rec.Code, err)
	}
	resp.Body.Close()
	return o, nil
}
