package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// maxBatchBytes keeps a batch's body under the endpoint's 4 MiB.
const maxBatchBytes = 4<<20 - 64<<10

// pending is a record with its create item, ready to send.
type pending struct {
	rec  Record
	item json.RawMessage
}

// importer streams records from a source to the API in batches; memory
// holds one batch.
type importer struct {
	c         *client
	batchSize int
	dryRun    bool
	overwrite bool
	asJSON    bool
	out, errw io.Writer
	unit      string
	prog      *progress
	sum       summary
	mode      string          // modeImport or modeCreate once the server has answered
	dropped   map[string]bool // fields the create mode could not keep, noted once
}

func newImporter(c *client, g *globals, f *importFlags, cmd *cobra.Command) *importer {
	return &importer{
		c: c, batchSize: f.batchSize, dryRun: f.dryRun, overwrite: f.overwrite, asJSON: g.json,
		out: cmd.OutOrStdout(), errw: cmd.ErrOrStderr(), sum: summary{DryRun: f.dryRun}, dropped: map[string]bool{},
	}
}

// run reads every record and sends them; the summary is printed even
// when the import stops on an error.
func (im *importer) run(ctx context.Context, src Source) error {
	im.unit = src.Unit()
	err := im.stream(ctx, src)
	im.prog.clear()
	im.noteDropped()
	if im.asJSON {
		im.sum.Mode = im.mode
		if werr := writeJSONLine(im.out, map[string]any{"summary": im.sum}); err == nil {
			err = werr
		}
	} else {
		im.sum.write(im.out)
	}
	if err == nil && (im.sum.Conflicts > 0 || im.sum.Refused > 0) {
		return &cmdError{ExitConflict, fmt.Sprintf("%d conflicts and %d refused records (%ss above)", im.sum.Conflicts, im.sum.Refused, im.unit)}
	}
	return err
}

func (im *importer) stream(ctx context.Context, src Source) error {
	var batch []pending
	size := 0
	for {
		rec, err := src.Next()
		if err == io.EOF {
			return im.flush(ctx, batch)
		}
		if isRecordErr(err) {
			re := err.(*RecordError)
			if err := im.report(outcome{Line: re.Line, Code: re.Code, Result: outRefused, Reason: re.Msg}); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			if ferr := im.flush(ctx, batch); ferr != nil {
				return ferr
			}
			return usageErr("reading the file: %v", err)
		}
		p, reason := im.prepare(rec)
		if reason != "" {
			if err := im.report(outcome{Line: rec.Line, Code: rec.Code, Result: outRefused, Reason: reason}); err != nil {
				return err
			}
			continue
		}
		if len(batch) == im.batchSize || size+len(p.item) > maxBatchBytes {
			if err := im.flush(ctx, batch); err != nil {
				return err
			}
			batch, size = batch[:0], 0
		}
		batch = append(batch, p)
		size += len(p.item) + 1
	}
}

// prepare checks what the client can judge alone and encodes the item.
func (im *importer) prepare(rec Record) (pending, string) {
	switch {
	case rec.Code == "":
		return pending{}, "no code: an import keeps each link's code"
	case rec.LongURL == "":
		return pending{}, "long_url: empty"
	}
	item, err := json.Marshal(importItem(&rec))
	if err != nil {
		return pending{}, err.Error()
	}
	if len(item) > maxRecordBytes {
		return pending{}, fmt.Sprintf("the record is longer than %d bytes", maxRecordBytes)
	}
	return pending{rec: rec, item: item}, ""
}

// flush sends a batch and reports its outcomes.
func (im *importer) flush(ctx context.Context, batch []pending) error {
	if len(batch) == 0 {
		return nil
	}
	outs, err := im.send(ctx, batch)
	if err != nil {
		return err
	}
	for _, o := range outs {
		if err := im.report(o); err != nil {
			return err
		}
	}
	return nil
}

// report counts an outcome and prints it if it needs attention.
func (im *importer) report(o outcome) error {
	im.sum.add(o)
	im.prog.tick(im.sum.Records, false)
	if !im.asJSON && o.Result != outCreated && o.Result != outSkipped {
		im.prog.clear()
	}
	return reportOutcome(im.out, im.asJSON, im.unit, o)
}

// noteDropped says once which fields of the file the server could not
// keep.
func (im *importer) noteDropped() {
	if len(im.dropped) == 0 {
		return
	}
	var names []string
	for _, n := range []string{"created_at", "clicks", "hourly"} {
		if im.dropped[n] {
			names = append(names, n)
		}
	}
	fmt.Fprintf(im.errw, "note: this server's batch endpoint has no import mode, so the file's %s are not kept\n", strings.Join(names, " and "))
}
