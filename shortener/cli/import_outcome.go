package cli

import (
	"fmt"
	"io"
)

// Outcomes of one imported record.
const (
	outCreated  = "created"  // a new link (with --dry-run: would be)
	outSkipped  = "skipped"  // the code is there with the same destination: nothing to do
	outConflict = "conflict" // the code is there with another destination (or a grown total)
	outUpdated  = "updated"  // a conflict edited with --overwrite (PATCH, history kept)
	outRefused  = "refused"  // the file or the API refused the record
)

// outcome is what became of one record.
type outcome struct {
	Line   int    `json:"line"`
	Code   string `json:"code,omitempty"`
	Result string `json:"result"`
	Reason string `json:"reason,omitempty"`
}

// summary counts the outcomes of an import.
type summary struct {
	Records   int  `json:"records"`
	Created   int  `json:"created"`
	Skipped   int  `json:"skipped"`
	Conflicts int  `json:"conflicts"`
	Updated   int  `json:"updated"`
	Refused   int  `json:"refused"`
	DryRun    bool `json:"dry_run"`
	// Mode is how the server took the records: import, or create on a
	// server without the import mode.
	Mode string `json:"mode,omitempty"`
}

func (s *summary) add(o outcome) {
	s.Records++
	switch o.Result {
	case outCreated:
		s.Created++
	case outSkipped:
		s.Skipped++
	case outConflict:
		s.Conflicts++
	case outUpdated:
		s.Updated++
	case outRefused:
		s.Refused++
	}
}

// write prints the summary line (the table form).
func (s *summary) write(w io.Writer) {
	verb := "created"
	if s.DryRun {
		verb = "would create"
	}
	fmt.Fprintf(w, "%d records: %s %d, skipped %d, conflicts %d, updated %d, refused %d\n",
		s.Records, verb, s.Created, s.Skipped, s.Conflicts, s.Updated, s.Refused)
}

// reportOutcome prints a record that needs attention (conflict, refused,
// updated) as it is known, so nothing piles up in memory; with --json
// every outcome is a line.
func reportOutcome(w io.Writer, asJSON bool, unit string, o outcome) error {
	if asJSON {
		return writeJSONLine(w, o)
	}
	if o.Result == outCreated || o.Result == outSkipped {
		return nil
	}
	code := ""
	if o.Code != "" {
		code = Sanitize(o.Code) + " "
	}
	_, err := fmt.Fprintf(w, "%s %d: %s%s: %s\n", unit, o.Line, code, o.Result, Sanitize(o.Reason))
	return err
}
